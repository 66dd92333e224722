"""Test helpers for Spark test modules: why a module must skip, hard
timeouts (per test, and for module fixtures), and ending the JVM that
pyspark started.

Use: `from spark_testing import hard_timeout  # noqa: F401` makes the
autouse fixture apply to the module's tests; mark a test with
@timeout(seconds) to change its limit.
"""
import contextlib
import faulthandler
import importlib.util
import os
import shutil
import signal

import pytest

DEFAULT_TIMEOUT_S = 120


def skip_reason(*modules):
    """None, or why Spark tests cannot run here (a module or Java missing)."""
    for name in ("pyspark", *modules):
        if importlib.util.find_spec(name) is None:
            return f"{name} is not installed (scripts/setup_spark.sh installs the Spark stack)"
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        return "no Java: pyspark 4 needs JDK 17 or 21 (scripts/setup_spark.sh installs it)"
    return None


def timeout(seconds):
    """Gives a test its own hard timeout (default DEFAULT_TIMEOUT_S)."""
    def mark(fn):
        fn.hard_timeout_s = seconds
        return fn
    return mark


class HardTimeout(BaseException):
    """Raised in the test's thread when it runs past its timeout (a
    BaseException, so no `except Exception` on the way swallows it)."""


@contextlib.contextmanager
def deadline(seconds, what):
    """Raises HardTimeout in this (main) thread if the block runs past
    `seconds`; faulthandler ends the process 60 s later if even that cannot
    act. For module fixtures too, which run before a test's own timeout."""
    def expire(signum, frame):
        raise HardTimeout(f"{what} ran past its {seconds} s timeout")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    faulthandler.dump_traceback_later(seconds + 60, exit=True)
    try:
        yield
    finally:
        signal.alarm(0)
        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(autouse=True)
def hard_timeout(request):
    limit = getattr(request.function, "hard_timeout_s", DEFAULT_TIMEOUT_S)
    with deadline(limit, request.node.name):
        yield


def stop_jvm():
    """Ends the JVM pyspark started for this process (it exits when its
    stdin closes), so the rest of the suite does not carry it."""
    from pyspark import SparkContext  # noqa: PLC0415
    gateway = SparkContext._gateway  # noqa: SLF001
    if gateway is None:
        return
    gateway.shutdown()
    proc = getattr(gateway, "proc", None)
    if proc is not None:
        proc.stdin.close()
        proc.wait(timeout=30)
    SparkContext._gateway = None  # noqa: SLF001
    SparkContext._jvm = None  # noqa: SLF001
