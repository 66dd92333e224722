"""Fault tests through the real launcher: a rank dies, vanishes, shuts down
early or stalls, and the job ends with a clear error within a deadline —
never a hang. Every job runs under a hard subprocess timeout."""
import re
import time
from pathlib import Path

import pytest

from launch_util import horovodrun_script

SCRIPT = Path(__file__).resolve().parent / "fault_scripts" / "faulty_training.py"
HARD_TIMEOUT = 90


def run_job(np_, mode, **extra_env):
    return horovodrun_script(np_, SCRIPT, mode, timeout=HARD_TIMEOUT, **extra_env)


@pytest.mark.parametrize("np_", [2, 3])
def test_sigkill_mid_training_stops_job_naming_rank(np_):
    r = run_job(np_, "sigkill")
    ended = time.time()
    assert r.returncode != 0, r.stdout + r.stderr
    assert "rank 1" in r.stderr and "SIGKILL" in r.stderr, r.stderr
    # Start-up of np python processes with torch is part of the time; the
    # failure itself must be reported within seconds, not a gloo timeout.
    assert r.elapsed < 10 + 5 * np_, r.elapsed
    killed = float(re.search(r"KILLED_AT ([\d.]+)", r.stdout).group(1))
    assert ended - killed < 5, f"job ended {ended - killed:.1f} s after the kill"


def test_frozen_rank_is_named_within_the_timeout():
    """SIGSTOP: the process exists but never answers; rank 0's next cycle
    times out (HOROVOD_GLOO_TIMEOUT_SECONDS) naming rank 1, and the job ends."""
    r = run_job(2, "sigstop", HOROVOD_GLOO_TIMEOUT_SECONDS=5)
    assert r.returncode != 0, r.stdout + r.stderr
    caught = [l for l in r.stdout.splitlines() if "CAUGHT HorovodInternalError" in l]
    assert caught and "rank 1" in caught[0], r.stdout + r.stderr
    assert r.elapsed < 5 + 20, r.elapsed  # start-up + the timeout + teardown


def test_vanished_peer_raises_instead_of_hanging():
    r = run_job(2, "vanish", HOROVOD_GLOO_TIMEOUT_SECONDS=20)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "CAUGHT HorovodInternalError" in r.stdout, r.stdout + r.stderr
    assert r.elapsed < 30, r.elapsed


def test_peer_shutdown_fails_pending_ops():
    r = run_job(2, "shutdown")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "CAUGHT HorovodInternalError" in r.stdout and "shut down" in r.stdout, r.stdout


def test_stall_inspector_shuts_down_and_names_missing_ranks():
    r = run_job(2, "stall", HOROVOD_STALL_CHECK_TIME_SECONDS=1,
                HOROVOD_STALL_SHUTDOWN_TIME_SECONDS=2)
    assert r.returncode == 0, r.stdout + r.stderr
    caught = [l for l in r.stdout.splitlines() if "CAUGHT" in l]
    assert caught, r.stdout + r.stderr
    assert "only_on_rank_0" in r.stdout + r.stderr and "rank" in caught[0], r.stdout + r.stderr
    assert r.elapsed < 30, r.elapsed
