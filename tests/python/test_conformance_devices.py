"""The conformance suite (horovod_accel.conformance) at np 1-4 on the emulated
vendor stacks, through the test-only torch device (tests/emulated/torch_gcu):

- the GCU plugin over the emulated TOPS runtime + ECCL, device 'gcu'
  (scripts/emulated_gcu.sh);
- the CUDA plugin over the emulated CUDA runtime + NCCL, device 'emucuda'
  (scripts/emulated_cuda.sh: this torch build has no CUDA and PrivateUse1
  cannot be named 'cuda', so the test device runs its cuda* flavour as
  'emucuda' and HOROVOD_CUDA_DEVICE_TYPE=emucuda points the plugin at it).

Neither ECCL nor NCCL has an int16 type, so int16 reductions (and the batch
case that includes every dtype) must be reported as unsupported - a clear
refusal - and nothing else may be; nothing may fail. On GPU machines the CUDA
plugin runs the same suite on real CUDA: `horovodrun -np N python -m
horovod_accel.conformance --device cuda`.
"""
import re
import subprocess
import sys

import pytest

from launch_util import REPO, job_env


def run_conformance(script, device, np_):
    """The suite at np_ ranks under scripts/<script> with --device device
    --quick; asserts 0 failed, more than 500 passed, exit 0, and that every
    unsupported case is an int16 reduction (what ECCL and NCCL lack)."""
    cmd = ["bash", str(REPO / "scripts" / script), sys.executable, "-m",
           "horovod_accel.runner.launch", "-np", str(np_), sys.executable, "-m",
           "horovod_accel.conformance", "--device", device, "--quick"]
    try:
        r = subprocess.run(cmd, env=job_env(), capture_output=True, text=True, timeout=600,
                           cwd=str(REPO))
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"conformance on {device} at np {np_} did not finish in 600 s:\n"
                    f"{e.stdout}\n{e.stderr}")
    out = r.stdout + r.stderr
    final = re.findall(r"conformance: (\d+) passed, (\d+) failed", r.stdout)
    assert final, out[-6000:]
    passed, failed = map(int, final[-1])
    assert failed == 0 and passed > 500, out[-6000:]
    assert r.returncode == 0, out[-6000:]
    unsupported = re.search(r"conformance: \d+ unsupported: (.*)", r.stdout)
    if unsupported:
        for name in unsupported.group(1).split(", "):
            assert "int16" in name or "all-dtypes" in name, name
    # the refusals name int16 (the all-dtypes batch too)
    for detail in re.findall(r"UNSUPPORTED \S+: (.*)", r.stdout):
        assert "of int16 with" in detail, detail


@pytest.mark.parametrize("np_", [1, 2, 3, 4])
def test_conformance_on_emulated_gcu(np_):
    run_conformance("emulated_gcu.sh", "gcu", np_)


@pytest.mark.parametrize("np_", [1, 2, 3, 4])
def test_conformance_on_emulated_cuda(np_):
    run_conformance("emulated_cuda.sh", "emucuda", np_)
