"""The protocol between the Spark driver (horovod_accel/spark/driver/) and its
Spark tasks (horovod_accel/spark/task/): store keys and value formats, in one
place. Pure functions, no I/O.

NOTE [Spark task protocol]
The driver serves the job's rendezvous store (horovod_accel/rendezvous/, the
one horovodrun serves; same per-job secret, which reaches the tasks only
inside the pickled closure of the Spark job). Every Spark task attempt is
named `<partition>.<attempt>` (TASK_NAME) and talks to the driver only
through that store:
- register: `n = ADD(REGISTERED_KEY, 1)`, then SET `reg/<n>` = its TaskInfo
  (JSON). The driver reads `reg/1`, `reg/2`, ... in order.
- heartbeat: ADD `alive/<name>` every HEARTBEAT_S while the task lives. The
  driver counts a task whose counter stops moving for LOST_AFTER_S as lost
  (its Python worker or executor died: nobody is left to report).
- commands: the task waits for `cmd/<name>/<k>`, k = 0, 1, ... (one per rank
  process it runs): JSON {"kind": "start", "env", "executable", "rank",
  "size", "timestamp"} or {"kind": "stop"} (the job is over: the task returns).
- while rank process k runs: the driver SETs `sig/<name>/<k>/<i>` = a signal
  number, i = 0, 1, ...; the task sends it to the rank's process group.
- output of rank process k: the task SETs `out/<name>/<k>/<n>`, n = 0, 1, ...
  = JSON [[stream, text], ...] with rank-prefixed lines (stream "stdout" or
  "stderr"), then JSON null (EOF). The driver deletes what it has read.
- exit of rank process k (after its EOF): `exit/<name>/<k>` = JSON
  {"returncode", "tail" (last stderr lines), "how" (text or null)}.
- leaving: `gone/<name>` = the reason, when the task returns or fails; the
  driver stops counting it as capacity at once (no heartbeat wait).
The rank process itself speaks horovod.run's protocol (NOTE [horovod.run
store records] in horovod_accel/runner/run_task.py) and, in run_elastic, the
elastic rounds (NOTE [Elastic rounds]) through the same store.
"""
import json

PREFIX = "horovod_accel/spark/"
REGISTERED_KEY = PREFIX + "registered"
HEARTBEAT_S = 0.5
LOST_AFTER_S = 6.0

# The variables a rank process finds in its environment (set by its task).
TASK_RESOURCES_ENV = "_HOROVOD_SPARK_TASK_RESOURCES"   # JSON {name: [addresses]}
TASK_PID_ENV = "_HOROVOD_SPARK_TASK_PID"               # the task that must outlive the rank


def task_name(partition, attempt):
    return f"{int(partition)}.{int(attempt)}"


def registration_key(seq):
    return f"{PREFIX}reg/{int(seq)}"


def alive_key(name):
    return f"{PREFIX}alive/{name}"


def gone_key(name):
    return f"{PREFIX}gone/{name}"


def command_key(name, k):
    return f"{PREFIX}cmd/{name}/{int(k)}"


def signal_key(name, k, i):
    return f"{PREFIX}sig/{name}/{int(k)}/{int(i)}"


def output_key(name, k, n):
    return f"{PREFIX}out/{name}/{int(k)}/{int(n)}"


def exit_key(name, k):
    return f"{PREFIX}exit/{name}/{int(k)}"


# ---- values ----

def format_task_info(info):
    return json.dumps(info, sort_keys=True)


def parse_task_info(value):
    """-> dict with name, partition, attempt, host_id, hostname, pid."""
    return json.loads(value)


def start_command(env, executable, rank, size, timestamp):
    return json.dumps({"kind": "start", "env": dict(env), "executable": executable,
                       "rank": int(rank), "size": int(size), "timestamp": bool(timestamp)})


def stop_command():
    return json.dumps({"kind": "stop"})


def parse_command(value):
    return json.loads(value)


def format_output(batch):
    """batch: [(stream, text)], or None for the end of the output."""
    return json.dumps(batch)


def parse_output(value):
    """-> [[stream, text], ...] or None (the end)."""
    return json.loads(value)


def format_exit(returncode, tail, how=None):
    return json.dumps({"returncode": int(returncode), "tail": list(tail), "how": how})


def parse_exit(value):
    return json.loads(value)
