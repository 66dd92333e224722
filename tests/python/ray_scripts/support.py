"""What test_ray.py and test_ray_elastic.py share: a hard timeout that never
lets a hung Ray job stall the suite, and the runtime_env their Ray instances
give the actors."""
import contextlib
import faulthandler
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


@contextlib.contextmanager
def hard_timeout(seconds):
    """Past `seconds`, dumps every thread's stack and ends the test process
    (faulthandler's watchdog thread: works while the main thread is blocked
    inside Ray or the core, where a signal handler would never run)."""
    faulthandler.dump_traceback_later(seconds, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def worker_runtime_env():
    """The actors unpickle the test modules' functions by reference, so they
    must import those modules (and horovod_accel) whatever directory pytest
    ran from."""
    path = [str(REPO / "tests" / "python"), str(REPO), os.environ.get("PYTHONPATH", "")]
    return {"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in path if p)}}
