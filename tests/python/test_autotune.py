"""Autotune through the real launcher (docs/design/autotune.md).

`horovodrun --autotune --autotune-log-file F` on a small torch training job:
the tuner warms up, scores trials with changing fusion threshold / cycle
time, freezes the best, writes upstream's CSV log on rank 0 -- and the job
ends with bit-identical parameters (so the same loss and accuracy) as the
same job without autotune, because every rank fuses identically in every
cycle and fusion never changes a result. Hard timeouts on every job.
"""
import csv
import re
import sys

import pytest

from launch_util import REPO, horovodrun, tail

SCRIPT = REPO / "tests" / "python" / "autotune_scripts" / "train_autotune.py"
STEPS = 60      # 1 warm-up + 6 scored trials of 5 samples x 1 step need ~42
TRIALS = 6
TIMEOUT = 120
HEADER = ["hierarchical_allreduce", "hierarchical_allgather", "torus_allreduce", "cache_enabled",
          "cycle_time_ms", "tensor_fusion_threshold", "score"]

pytest.importorskip("torch")


def _train(np_, *launcher_flags):
    r = horovodrun(["-np", np_, *launcher_flags, sys.executable, SCRIPT, STEPS], TIMEOUT)
    assert r.returncode == 0, "training job failed" + tail(r)
    results = {int(rank): line for rank, line in
               re.findall(r"^\[(\d+)\]<stdout>:AUTOTUNE-RESULT (.*)$", r.stdout, re.M)}
    assert sorted(results) == list(range(np_)), "not every rank reported" + tail(r)
    return r, results


def _autotune_flags(log):
    return ["--autotune", "--autotune-log-file", log, "--autotune-warmup-samples", "1",
            "--autotune-steps-per-sample", "1", "--autotune-bayes-opt-max-samples", TRIALS,
            "--log-level", "INFO"]


def _read_log(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    assert rows and rows[0] == HEADER, rows[:1]
    return [[float(v) for v in row] for row in rows[1:]]


@pytest.mark.parametrize("np_", [2, 3])
def test_autotune_converges_logs_and_trains_identically(np_, tmp_path):
    # np 3 also fixes the cycle time: a value set explicitly is not tuned.
    fixed = ["--cycle-time-ms", "2"] if np_ == 3 else []
    _, plain = _train(np_, *fixed)
    log = tmp_path / "autotune.csv"
    r, tuned = _train(np_, *fixed, *_autotune_flags(log))
    assert tuned == plain, f"autotune changed the training result:\n{tuned}\nvs\n{plain}"
    accuracy = float(re.search(r"accuracy=([\d.]+)", tuned[0]).group(1))
    assert accuracy > 0.5, tuned[0]

    rows = _read_log(log)
    assert len(rows) == TRIALS + 1, f"one row per scored trial and the best:\n{rows}" + tail(r)
    scored, best = rows[:-1], rows[-1]
    assert best in scored, "the last row repeats the best trial"
    assert all(row[6] > 0 for row in rows), rows
    assert [row[:4] for row in rows] == [[0, 0, 0, 1]] * len(rows), "untuned columns"
    assert scored[0][4:6] == [2.0 if fixed else 1.0, 128.0], "trial 1 runs the start values"
    if fixed:
        assert {row[4] for row in rows} == {2.0}, "the fixed cycle time must not change"
    else:
        assert len({row[4] for row in scored}) >= 3, "cycle time should be tuned"
    assert len({row[5] for row in scored}) >= 3, "fusion threshold should be tuned"

    # Rank 0 warmed up, then froze the best values; nothing is tuned afterwards.
    out = r.stderr + r.stdout
    assert "warm-up trial" in out, tail(r)
    done = out.find("autotune: done; keeping")
    assert done >= 0, "autotune did not converge" + tail(r)
    assert "autotune: trial" not in out[done:], tail(r)
    assert len(re.findall(r"autotune: trial \d+/", out)) == TRIALS, tail(r)


def test_bad_autotune_setting_fails_clearly(tmp_path):
    r = horovodrun(["-np", 1, sys.executable, SCRIPT, 1], TIMEOUT, HOROVOD_AUTOTUNE="1",
                   HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE="1.5")
    assert r.returncode != 0, tail(r)
    assert "HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE=1.5 must be in [0, 1]" in r.stdout + r.stderr, \
        tail(r)
