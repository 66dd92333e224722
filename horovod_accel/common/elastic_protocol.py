"""The elastic rendezvous protocol between horovodrun's elastic driver
(horovod_accel/runner/elastic/) and its workers (elastic_worker.py): store
keys and value formats, in one place. Pure functions, no I/O.

NOTE [Elastic rounds]
An elastic job is a sequence of rounds. Round R is one fixed set of worker
processes with ranks 0..size-1; the core joins it with `init()` and names its
store keys and shm segments "e<R>/" (so nothing of one round meets another).
- Every worker has a job-unique id (WORKER_ID_ENV) given at spawn; a worker
  is never reused under a new id and an id never names another process, so a
  host that returns under the same name gets new workers (horovod#3852).
- The driver publishes round R by writing `assignment_key(R, id)` for every
  worker it keeps (their topology) or drops (REMOVED). New workers are
  spawned with SPAWN_ROUND_ENV = R and join R directly.
- A survivor of round R that resets (shutdown(); init()) first writes
  `ready_key(R, id)`, then waits for `assignment_key(R + 1, id)`. The driver
  forms R + 1 only when every live worker of R is ready or gone (a worker that
  is alive but not ready past the ready timeout is stopped), so a survivor's
  next round is always R + 1.
- Host changes: the driver bumps HOSTS_EVENT_KEY = "<seq> <last_add_seq>"
  (sequence numbers, never timestamps: two updates in one second both count).
  A round records the seq it was formed at; a worker has a pending update when
  the current seq is newer, and may skip the state sync when no update since
  added hosts (last_add_seq not newer). State.check_host_updates() agrees on
  this collectively, so every rank raises HostsUpdatedInterrupt together.
"""

WORKER_ID_ENV = "_HOROVOD_ELASTIC_WORKER_ID"
SPAWN_ROUND_ENV = "_HOROVOD_ELASTIC_SPAWN_ROUND"
# The round the core joins (read by csrc/common/runtime.cc for its key prefix).
ROUND_ENV = "_HOROVOD_ELASTIC_ROUND"
# Seconds a resetting worker waits for its next round (set by the driver from
# --elastic-timeout plus its own margins).
ASSIGNMENT_TIMEOUT_ENV = "_HOROVOD_ELASTIC_ASSIGNMENT_TIMEOUT"

HOSTS_EVENT_KEY = "elastic/hosts_event"
REMOVED = "removed"

# Topology fields of an assignment, in order; each becomes HOROVOD_<FIELD>.
TOPOLOGY_FIELDS = ("rank", "size", "local_rank", "local_size", "cross_rank", "cross_size")


def assignment_key(round_, worker_id):
    return f"elastic/assign/{int(round_)}/{worker_id}"


def ready_key(round_, worker_id):
    return f"elastic/ready/{int(round_)}/{worker_id}"


def format_assignment(topology, hosts_seq):
    """topology: dict with TOPOLOGY_FIELDS; hosts_seq: the host-update sequence
    number the round was formed at."""
    return ",".join(str(int(topology[f])) for f in TOPOLOGY_FIELDS) + f";{int(hosts_seq)}"


def parse_assignment(value):
    """-> (topology dict, hosts_seq), or None if the worker was removed.
    ValueError on a malformed value."""
    text = value.decode() if isinstance(value, (bytes, bytearray)) else str(value)
    if text == REMOVED:
        return None
    fields, _, seq = text.partition(";")
    numbers = [int(x) for x in fields.split(",")]
    if len(numbers) != len(TOPOLOGY_FIELDS) or not seq:
        raise ValueError(f"malformed elastic assignment {text!r}")
    return dict(zip(TOPOLOGY_FIELDS, numbers)), int(seq)


def format_hosts_event(seq, last_add_seq):
    return f"{int(seq)} {int(last_add_seq)}"


def parse_hosts_event(value):
    """-> (seq, last_add_seq); (0, 0) before the first update."""
    if value is None:
        return 0, 0
    text = value.decode() if isinstance(value, (bytes, bytearray)) else str(value)
    seq, last_add = text.split()
    return int(seq), int(last_add)
