"""One rank of a horovod.spark job, started by its Spark task (rank_child.py):

    <executable> -m horovod_accel.spark.task.rank_main   (the job secret on stdin)

Contract with the task that starts it:
- the first line of stdin is the job's store secret; it is put into this
  process's os.environ (_HOROVOD_SECRET_KEY, read by the core at init) after
  start, so it is in no command line and not in /proc/<pid>/environ (what
  `ps e` shows: the environment a process was started with);
- the rank's HOROVOD_* variables are in the environment (rank_process.slot_env
  without the secret), and TASK_PID_ENV names the task process;
- this process dies with its task (PR_SET_PDEATHSIG): a Spark task killed
  with its Python worker or executor leaves no rank behind.
Then it is a rank of horovod.run's protocol: runner/run_task.py fetches the
call from the store, runs it and stores the result.
"""
import ctypes
import os
import signal
import sys

from horovod_accel.runner.rank_process import SECRET_ENV
from horovod_accel.spark import protocol

_PR_SET_PDEATHSIG = 1


def _die_with_task():
    """SIGKILL this process when the task that started it dies (Linux). The
    check after prctl closes the race with a task that died before it."""
    task_pid = int(os.environ.pop(protocol.TASK_PID_ENV, "0"))
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the task still kills this process group when it can
    if task_pid and os.getppid() != task_pid:
        os._exit(1)


def main():
    _die_with_task()
    secret = sys.stdin.readline().rstrip("\n")
    if not secret:  # this entry point's usage error, on its own stderr
        print("horovod.spark: this rank process got no job secret on stdin; it is started by "
              "a horovod.spark task, not by hand", file=sys.stderr)
        return 2
    os.environ[SECRET_ENV] = secret
    from horovod_accel.runner import run_task  # noqa: PLC0415 - after the secret is set
    return run_task.main()


if __name__ == "__main__":
    sys.exit(main())
