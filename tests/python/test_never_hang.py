"""Jobs must never hang and never diverge (ARCHITECTURE.md §6), through the
real launcher, each under a hard timeout:

- upstream-style suites: >= 60 init / ops / barrier / shutdown cycles in one
  process, mixing successes, duplicate names, mismatches, join with
  allgather / broadcast / object ops, one-sided rejections, deadlocks and a
  peer's shutdown; every cycle ends the same on every rank;
- deadlock detection: disjoint names fail on every rank within 10 s, naming
  every rank's pending tensors, and end the generation; a peer that is
  merely slow (30 s) never triggers it;
- init() after a peer's shutdown() does the same whatever the delays.
(Faults — killed, frozen or vanished ranks — are in test_faults.py; the
mismatch fuzz in test_mismatch_fuzz.py.)
"""
import re
from pathlib import Path

import pytest

from launch_util import assert_semantics_ok as assert_ok, horovodrun_script, tail as _tail

SCRIPTS = Path(__file__).resolve().parent / "semantics_scripts"


@pytest.mark.parametrize("np_", [2, 3])
def test_upstream_style_init_shutdown_cycles(np_):
    # 64 cycles = 8 rounds of the 8 scenarios (cycles.py); the deadlock
    # scenario uses a 1 s timeout to keep the suite short.
    r = horovodrun_script(np_, SCRIPTS / "cycles.py", 64, timeout=300,
                          HOROVOD_DEADLOCK_TIMEOUT_SECONDS=1)
    assert_ok(r, "cycles", np_)


@pytest.mark.parametrize("np_", [2, 3])
def test_deadlock_fails_every_rank_within_10s(np_):
    # The default timeout (HOROVOD_DEADLOCK_TIMEOUT_SECONDS unset).
    r = horovodrun_script(np_, SCRIPTS / "deadlock.py", "disjoint", timeout=180)
    assert_ok(r, "deadlock disjoint", np_)
    waits = [float(w) for line in re.findall(r"DEADLOCK-WAITS rank \d+: ([\d. ]+)", r.stdout)
             for w in line.split()]
    assert waits and max(waits) < 10, waits


def test_deadlock_detection_can_be_disabled():
    """HOROVOD_DEADLOCK_TIMEOUT_SECONDS=0: upstream's behaviour (warn only);
    the stall inspector's shutdown still ends the job."""
    r = horovodrun_script(2, Path(__file__).resolve().parent / "fault_scripts" /
                          "faulty_training.py", "stall", timeout=90,
                          HOROVOD_DEADLOCK_TIMEOUT_SECONDS=0, HOROVOD_STALL_CHECK_TIME_SECONDS=1,
                          HOROVOD_STALL_SHUTDOWN_TIME_SECONDS=8)
    assert r.returncode == 0, _tail(r)
    assert "stalled for" in r.stdout and "Deadlock" not in r.stdout + r.stderr, _tail(r)


def test_slow_peer_is_not_a_deadlock():
    r = horovodrun_script(3, SCRIPTS / "deadlock.py", "slow_peer", timeout=180)
    assert_ok(r, "deadlock slow_peer", 3)
    assert "Deadlock" not in r.stdout + r.stderr, _tail(r)


@pytest.mark.parametrize("np_", [2, 3])
def test_init_after_a_peers_shutdown_does_not_depend_on_timing(np_):
    # NOTE [Told of the end]: 8 rounds with the other ranks' init() before,
    # about when and long after the news of rank 1's shutdown.
    r = horovodrun_script(np_, SCRIPTS / "told_of_end.py", 8, timeout=180)
    assert_ok(r, "told_of_end", np_)


def test_ranks_at_different_init_generations_get_a_clear_error(tmp_path):
    """A failed init() on one rank leaves the ranks' init counts apart: both
    fail within their timeouts, saying which init each rank is at."""
    r = horovodrun_script(2, SCRIPTS / "init_mismatch.py", tmp_path, timeout=120,
                          HOROVOD_START_TIMEOUT=2, HOROVOD_GLOO_TIMEOUT_SECONDS=3)
    errors = dict(re.findall(r"INIT-ERROR rank (\d): (.*)", r.stdout))
    assert sorted(errors) == ["0", "1"], _tail(r)
    assert "Rank 1 is at its init() #1 while this rank is at #2" in errors["0"], errors
    assert "Rank 0 is at its init() #2 while this rank is at #1" in errors["1"], errors
