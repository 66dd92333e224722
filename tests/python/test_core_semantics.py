"""Core semantics through the real launcher (API.md §4/§5): init/shutdown,
cross-rank validation, naming, ordering, fusion, join, barrier, process
sets, timeline and the stall inspector.

Each job runs one worker script from semantics_scripts/ that performs many
checks and asserts inside (a failing check exits non-zero with a message
naming the rank); every rank prints 'SEMANTICS-OK <area>' when all passed.
Every job runs under a hard subprocess timeout, so a hang fails the test
instead of the suite.
"""
import json
import os
import re
import sys
from pathlib import Path

import pytest

from launch_util import assert_semantics_ok as assert_ok, horovodrun_script, run, tail as _tail

SCRIPTS = Path(__file__).resolve().parent / "semantics_scripts"
HARD_TIMEOUT = 120


def launch(np_, script, *args, **extra_env):
    """horovodrun -np np_ python semantics_scripts/<script> args..."""
    return horovodrun_script(np_, SCRIPTS / script, *args, timeout=HARD_TIMEOUT, **extra_env)


def plain(script, *args, **extra_env):
    """python semantics_scripts/<script> without the launcher (a size-1 job)."""
    return run([sys.executable, SCRIPTS / script, *args], HARD_TIMEOUT, **extra_env)


def digests(r):
    found = set(re.findall(r"DIGEST ([0-9a-f]{64})", r.stdout))
    assert len(found) == 1, "every rank must report the same result digest" + _tail(r)
    return found.pop()


# ---------------------------------------------------------------- init / shutdown / topology


def test_plain_python_is_a_size_1_job():
    r = plain("basics.py")
    assert_ok(r, "basics", 1)
    assert "size=1" in r.stdout


@pytest.mark.parametrize("np_", [1, 3])
def test_enqueue_binding_arguments(np_):
    assert_ok(launch(np_, "enqueue_binding.py"), "enqueue_binding", np_)


def test_interrupted_synchronize_leaves_the_handle_pending():
    assert_ok(launch(2, "interrupted_synchronize.py"), "interrupted_synchronize", 2)


@pytest.mark.parametrize("np_", [1, 2, 3])
def test_init_shutdown_reinit_and_topology(np_):
    r = launch(np_, "basics.py")
    assert_ok(r, "basics", np_)


# ---------------------------------------------------------------- cross-rank validation


@pytest.mark.parametrize("np_", [2, 3])
def test_mismatches_fail_on_every_rank_and_job_recovers(np_):
    r = launch(np_, "mismatch.py")
    assert_ok(r, "mismatch", np_)


def test_mismatches_without_response_cache():
    r = launch(2, "mismatch.py", HOROVOD_CACHE_CAPACITY=0)
    assert_ok(r, "mismatch", 2)


# ---------------------------------------------------------------- naming, ordering, fusion, barrier


def test_names_orders_fusion_barrier_np2():
    r = launch(2, "ordering.py")
    assert_ok(r, "ordering", 2)
    digests(r)


def test_results_identical_with_fusion_and_cache_disabled():
    """Same script at np 3: default settings, fusion and cache off, and a
    tiny fusion buffer (partial fusion) give bit-identical results."""
    runs = {
        "default": {},
        "no fusion, no cache": {"HOROVOD_FUSION_THRESHOLD": 0, "HOROVOD_CACHE_CAPACITY": 0},
        "1 KiB fusion buffer": {"HOROVOD_FUSION_THRESHOLD": 1024},
    }
    seen = {}
    for label, env in runs.items():
        r = launch(3, "ordering.py", **env)
        assert_ok(r, "ordering", 3)
        seen[label] = digests(r)
    assert len(set(seen.values())) == 1, f"results differ between settings: {seen}"


# ---------------------------------------------------------------- join


@pytest.mark.parametrize("np_,cache", [(2, None), (3, None), (3, 0)],
                         ids=["np2-cache", "np3-cache", "np3-nocache"])
def test_join(np_, cache):
    env = {} if cache is None else {"HOROVOD_CACHE_CAPACITY": cache}
    r = launch(np_, "join.py", **env)
    assert_ok(r, "join", np_)


# ---------------------------------------------------------------- process sets


def test_static_process_sets():
    r = launch(3, "process_sets.py", "static")
    assert_ok(r, "process_sets static", 3)


def test_dynamic_process_sets_add_and_duplicates():
    r = launch(3, "process_sets.py", "dynamic", HOROVOD_DYNAMIC_PROCESS_SETS=1)
    assert_ok(r, "process_sets dynamic", 3)


def test_dynamic_process_sets_remove():
    r = launch(3, "process_sets.py", "dynamic_remove")
    assert_ok(r, "process_sets dynamic_remove", 3)


# ---------------------------------------------------------------- timeline


EXPECTED_TIMELINE = ("NEGOTIATE_ALLREDUCE", '"ALLREDUCE"', "CYCLE_START",
                     "start_time_since_epoch_in_micros")


def _load_trace(path):
    with open(path) as f:
        events = json.load(f)
    assert isinstance(events, list) and events, path
    return json.dumps(events)


def test_timeline_file_from_env(tmp_path):
    path = tmp_path / "timeline.json"
    r = launch(2, "timeline.py", "file", tmp_path, HOROVOD_TIMELINE=path,
               HOROVOD_TIMELINE_MARK_CYCLES=1)
    assert_ok(r, "timeline file", 2)
    text = _load_trace(path)
    for s in ("allreduce.tl_file",) + EXPECTED_TIMELINE:
        assert s in text, f"{s!r} missing from {path}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["timeline.json"], "only rank 0 writes"


def test_timeline_dynamic_start_stop(tmp_path):
    r = launch(2, "timeline.py", "dynamic", tmp_path, HOROVOD_TIMELINE="DYNAMIC")
    assert_ok(r, "timeline dynamic", 2)
    first, second = _load_trace(tmp_path / "dyn1.json"), _load_trace(tmp_path / "dyn2.json")
    for s in ("allreduce.tl_dyn",) + EXPECTED_TIMELINE:
        assert s in first, f"{s!r} missing from dyn1.json"
    assert "after_stop" not in first and "after_stop" not in second
    assert "allreduce.tl_dyn2" in second
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dyn1.json", "dyn2.json"]


# ---------------------------------------------------------------- stall inspector


def _missing_ranks(stderr, tensor):
    """Ranks the stall warning names as missing for `tensor` (the warning
    line naming the tensor, or the line after it, lists them)."""
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        if tensor not in line:
            continue
        for candidate in lines[i:i + 2]:
            m = re.search(r"missing ranks?\W*(\d[\d,\s]*)", candidate, re.IGNORECASE)
            if m:
                return {int(x) for x in re.findall(r"\d+", m.group(1))}
    return None


def test_stall_warning_names_missing_ranks():
    r = launch(3, "stall.py", HOROVOD_STALL_CHECK_TIME_SECONDS=1)
    assert_ok(r, "stall", 3)
    assert "WARNING" in r.stderr.upper(), r.stderr
    assert _missing_ranks(r.stderr, "allreduce.stalled_tensor") == {1, 2}, r.stderr
    # Inside process set [1, 2] the missing rank is named by its global rank.
    assert _missing_ranks(r.stderr, "allreduce.ps_stalled_tensor") == {2}, r.stderr
    # A tensor that is in the response cache is reported as well.
    assert _missing_ranks(r.stderr, "allreduce.cached_stalled_tensor") == {1, 2}, r.stderr


# ---------------------------------------------------------------- settings


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two usable cores")
def test_thread_affinity_pins_background_thread():
    cores = sorted(os.sched_getaffinity(0))[:2]
    r = launch(2, "affinity.py", HOROVOD_THREAD_AFFINITY=f"{cores[1]},{cores[0]}")
    assert_ok(r, "affinity", 2)


def test_bad_thread_affinity_is_a_clear_error():
    r = launch(2, "affinity.py", HOROVOD_THREAD_AFFINITY="zero")
    assert r.returncode != 0
    assert "HOROVOD_THREAD_AFFINITY='zero'" in r.stderr and "not a core number" in r.stderr, r.stderr
