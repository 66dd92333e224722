"""PyTorch training on horovod_accel, multi-process through horovodrun.

One launch per rank count runs every check of training_scripts/ (data-parallel
equivalence with a single process for SGD and Adam, backward_passes_per_step,
groups, unused parameters, compression, sparse embeddings, zero_grad,
synchronize/skip_synchronize, broadcast_optimizer_state, process sets, ...);
two more launches run the upstream-style example script (training, then a
resume from its checkpoint). Every subprocess has a hard timeout; nothing
asserts on time.
"""
import re

import pytest

from launch_util import REPO, assert_every_rank_passed, check_names, horovodrun_script

CHECKS = REPO / "tests" / "python" / "training_scripts" / "run_checks.py"
EXAMPLE = REPO / "examples" / "pytorch" / "pytorch_mnist.py"
TIMEOUT = 180

pytest.importorskip("torch")


def horovodrun(np, script, *args):
    return horovodrun_script(np, script, *args, timeout=TIMEOUT)


@pytest.mark.parametrize("np", [2, 3])
def test_training_checks(np):
    r = horovodrun(np, CHECKS)
    names = check_names(*sorted(CHECKS.parent.glob("checks_*.py")))
    assert len(names) >= 15, names
    assert_every_rank_passed(r, np, names)


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
