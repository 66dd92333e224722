"""Runs one rank process inside a Spark task, for a `start` command of the
driver (NOTE [Spark task protocol]): starts it, forwards its output, passes
on the driver's signals, and reports how it exited.

Why a child process rather than the task's own Python worker: the rank can
crash, be killed or call os._exit and the task still reports it; the rank's
globals (the Horovod runtime, torch threads) die with it instead of leaking
into a reused Spark Python worker.

run_rank blocks until the rank process has exited and its exit is reported.
It must run on the task's main thread (the one that lives as long as the
task): the child's PR_SET_PDEATHSIG fires when the thread that started it
ends.
"""
import json
import os
import signal
import subprocess
import sys

from horovod_accel.rendezvous.client import StoreError, StoreTimeoutError
from horovod_accel.runner import output
from horovod_accel.runner.rank_process import SECRET_ENV
from horovod_accel.spark import protocol
from horovod_accel.spark.task.output_sink import OutputShipper

RANK_MAIN = "horovod_accel.spark.task.rank_main"
OUTPUT_DRAIN_S = 3.0
_SIGNAL_POLL_S = 0.05


def _rank_env(cmd, resources):
    env = {k: v for k, v in os.environ.items() if k != SECRET_ENV}
    env.update(cmd["env"])
    env[protocol.TASK_PID_ENV] = str(os.getpid())
    env[protocol.TASK_RESOURCES_ENV] = json.dumps(resources)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def _signal_group(proc, sig):
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _start(cmd, env, secret):
    """The started Popen, or (None, why) if it cannot be started."""
    argv = [cmd.get("executable") or sys.executable, "-m", RANK_MAIN]
    try:
        proc = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as e:
        return None, (f"could not start the rank process '{argv[0]}' on this executor: "
                      f"{e.strerror}; pass executable= a Python that exists on every executor")
    try:
        proc.stdin.write(secret.encode() + b"\n")
        proc.stdin.close()
    except OSError:
        pass  # it died at once; its exit status and stderr say why
    return proc, None


def _supervise(proc, store, name, k, driver_lost):
    """Blocks until proc exits; sends it the driver's signals meanwhile, and
    SIGKILL when the driver is lost (no one would ever stop it)."""
    i = 0
    while proc.poll() is None:
        if driver_lost.is_set():
            _signal_group(proc, signal.SIGKILL)
            proc.wait()
            break
        try:
            sig = int(store.get(protocol.signal_key(name, k, i), timeout=_SIGNAL_POLL_S))
            i += 1
            _signal_group(proc, sig)
        except StoreTimeoutError:
            pass
        except StoreError:
            driver_lost.set()
    return proc.returncode


def run_rank(cmd, k, name, store, connect, secret, resources, driver_lost):
    """Runs the rank of start command `cmd` (the task's k-th); returns its
    exit code. store: the task's main StoreClient; connect(): a new client
    (the output shipper owns one); driver_lost: an Event the heartbeat sets."""
    proc, why = _start(cmd, _rank_env(cmd, resources), secret)
    if proc is None:
        store.set(protocol.output_key(name, k, 0), protocol.format_output(None))
        store.set(protocol.exit_key(name, k), protocol.format_exit(127, [why], how=why))
        return 127
    shipper = OutputShipper(connect(), name, k)
    rank, stamp = cmd["rank"], cmd.get("timestamp", False)
    out = output.StreamForwarder(proc.stdout, rank, "stdout", shipper.console("stdout"),
                                 timestamp=stamp).start()
    err = output.StreamForwarder(proc.stderr, rank, "stderr", shipper.console("stderr"),
                                 timestamp=stamp, tail_lines=output.STDERR_TAIL_LINES).start()
    try:
        code = _supervise(proc, store, name, k, driver_lost)
    finally:
        if proc.poll() is None:  # interrupted (the task is being killed)
            _signal_group(proc, signal.SIGKILL)
            proc.wait()
        # Children the rank left behind die with its group; then the last output.
        _signal_group(proc, signal.SIGKILL)
        out.join(OUTPUT_DRAIN_S)
        err.join(OUTPUT_DRAIN_S)
        shipper.close()
    if not driver_lost.is_set():
        store.set(protocol.exit_key(name, k), protocol.format_exit(code, list(err.tail)))
    return code
