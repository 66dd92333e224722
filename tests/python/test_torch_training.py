"""PyTorch training on horovod_accel, multi-process through horovodrun.

One launch per rank count runs every check of training_scripts/ (data-parallel
equivalence with a single process for SGD and Adam, backward_passes_per_step,
groups, unused parameters, compression, sparse embeddings, zero_grad,
synchronize/skip_synchronize, broadcast_optimizer_state, process sets, ...);
two more launches run the upstream-style example script (training, then a
resume from its checkpoint). Every subprocess has a hard timeout; nothing
asserts on time.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHECKS = REPO / "tests" / "python" / "training_scripts" / "run_checks.py"
EXAMPLE = REPO / "examples" / "pytorch" / "pytorch_mnist.py"
TIMEOUT = 180

pytest.importorskip("torch")


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.pop("HOROVOD_CPU_OPERATIONS", None)
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def horovodrun(np, script, *args):
    cmd = [sys.executable, "-m", "horovod_accel.runner.launch", "-np", str(np),
           sys.executable, str(script), *map(str, args)]
    try:
        return subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=TIMEOUT,
                              cwd=str(REPO))
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else e.stdout
        pytest.fail(f"{script.name} at np={np} did not finish in {TIMEOUT} s; output:\n{out}")


def _check_names():
    """Names of every registered check (functions decorated with @check)."""
    text = "\n".join(p.read_text() for p in sorted(CHECKS.parent.glob("checks_*.py")))
    return re.findall(r"@check\ndef (\w+)\(", text)


@pytest.mark.parametrize("np", [2, 3])
def test_training_checks(np):
    r = horovodrun(np, CHECKS)
    assert r.returncode == 0, f"rc={r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    names = _check_names()
    assert len(names) >= 15, names
    for rank in range(np):
        passed = set(re.findall(rf"^\[{rank}\]<stdout>:PASS (\w+)$", r.stdout, re.M))
        missing = [n for n in names if n not in passed]
        assert not missing, f"rank {rank} did not report {missing}:\n{r.stdout}\n{r.stderr}"


def _accuracy(stdout):
    m = re.search(r"final test accuracy ([\d.]+)%", stdout)
    assert m, f"no final accuracy line:\n{stdout}"
    return float(m.group(1)) / 100


def test_mnist_example_trains_and_resumes(tmp_path):
    ckpt = tmp_path / "ckpt"
    r = horovodrun(2, EXAMPLE, "--epochs", "6", "--checkpoint-dir", ckpt)
    assert r.returncode == 0, f"rc={r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert _accuracy(r.stdout) > 0.9, r.stdout
    losses = [float(x) for x in re.findall(r"^\[0\]<stdout>:epoch \d+/6: train loss ([\d.]+)",
                                           r.stdout, re.M)]
    assert len(losses) == 6 and losses[-1] < losses[0], r.stdout
    assert "epoch" not in "".join(l for l in r.stdout.splitlines() if l.startswith("[1]")), \
        "only rank 0 prints progress"
    assert (ckpt / "checkpoint-6.pt").exists()

    # A restarted job (other size) resumes from the newest checkpoint via broadcast.
    r = horovodrun(3, EXAMPLE, "--epochs", "7", "--checkpoint-dir", ckpt)
    assert r.returncode == 0, f"rc={r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert "resumed from epoch 6" in r.stdout, r.stdout
    assert re.search(r"epoch 7/7", r.stdout) and not re.search(r"epoch [1-6]/7", r.stdout)
    assert _accuracy(r.stdout) > 0.9, r.stdout
