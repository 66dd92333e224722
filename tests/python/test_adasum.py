"""Adasum (op=hvd.Adasum) through the real launcher: allreduce against a
locally computed float64 reference, grouped/scaled/in-place variants,
argument errors, and DistributedOptimizer(op=hvd.Adasum) (upstream's
delta-based optimizer) against a reference of its semantics, plus an Adam
run with falling loss and identical parameters on every rank. Odd world
sizes exercise the pass-through of an unpaired rank. Every subprocess has a
hard timeout; nothing asserts on time.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tests" / "python" / "training_scripts" / "adasum_checks.py"
TIMEOUT = 120

pytest.importorskip("torch")


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.pop("HOROVOD_CPU_OPERATIONS", None)
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _check_names():
    return re.findall(r"@check\ndef (\w+)\(", SCRIPT.read_text())


@pytest.mark.parametrize("np", [2, 3, 4])
def test_adasum_checks(np):
    cmd = [sys.executable, "-m", "horovod_accel.runner.launch", "-np", str(np),
           sys.executable, str(SCRIPT)]
    try:
        r = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=TIMEOUT,
                           cwd=str(REPO))
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else e.stdout
        pytest.fail(f"adasum_checks.py at np={np} did not finish in {TIMEOUT} s; output:\n{out}")
    assert r.returncode == 0, f"rc={r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    names = _check_names()
    assert len(names) >= 5, names
    for rank in range(np):
        passed = set(re.findall(rf"^\[{rank}\]<stdout>:PASS (\w+)$", r.stdout, re.M))
        missing = [n for n in names if n not in passed]
        assert not missing, f"rank {rank} did not report {missing}:\n{r.stdout}\n{r.stderr}"
