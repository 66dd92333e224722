"""Framework tensors on an accelerator, end to end through its plugin: every
collective, async/grouped forms, and DistributedOptimizer training compared
with the same run on the CPU (tests/python/device_scripts/device_ops.py).

- 'gcu': the GCU plugin over the emulated TOPS runtime + ECCL, with the
  test-only torch 'gcu' device autoloaded (scripts/emulated_gcu.sh sets it all
  up, as a user would run an unchanged script), at np 2 and 3;
- 'cuda': the CUDA plugin on a real GPU; skipped here when torch has no CUDA.
"""
import subprocess
import sys

import pytest
import torch

import emulated_build
from launch_util import REPO, job_env

SCRIPT = REPO / "tests" / "python" / "device_scripts" / "device_ops.py"
JAX_SCRIPT = REPO / "tests" / "python" / "device_scripts" / "jax_device_ops.py"


def _run(wrapper, np_, device_type, timeout=600, script=SCRIPT, **env):
    """device_ops.py at np_ ranks through horovodrun, under scripts/<wrapper>
    (None: the environment as is); asserts every rank passed every check."""
    cmd = [sys.executable, "-m", "horovod_accel.runner.launch", "-np", str(np_), sys.executable,
           str(script), device_type]
    if wrapper:
        cmd = ["bash", str(REPO / "scripts" / wrapper), *cmd]
    try:
        r = subprocess.run(cmd, env=job_env(**env), capture_output=True, text=True,
                           timeout=timeout, cwd=str(REPO))
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"device job did not finish within {timeout} s:\n{e.stdout}\n{e.stderr}")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-8000:]
    for rank in range(np_):
        assert f"[{rank}]<stdout>:RESULT OK" in out, out[-8000:]
    assert "FAIL" not in r.stdout, out[-8000:]
    return out


@pytest.mark.parametrize("np_", [2, 3])
def test_emulated_gcu_ops_and_training(np_):
    out = _run("emulated_gcu.sh", np_, "gcu")
    for name in ("allreduce_sum_average_and_scales", "inplace_grouped_and_async",
                 "allgather_broadcast_alltoall_reducescatter", "training_matches_cpu",
                 "compiled_collectives_match_eager"):
        assert f"PASS {name}" in out


@pytest.mark.skipif(not torch.cuda.is_available(),
                    reason="no CUDA device in this torch build / machine: the CUDA plugin's torch "
                           "path runs on GPU machines (the emulated CUDA stack is covered by "
                           "test_emulated_stack.py and the conformance suite)")
def test_cuda_ops_and_training():
    plugin = REPO / "build" / "devices" / "libhorovod_accel_cuda.so"
    subprocess.run(["bash", "-c", ". scripts/emulated_env.sh && _hvda_build csrc/devices "
                    "build/devices horovod_accel_cuda"], cwd=str(REPO), check=True, timeout=900)
    # NCCL runs one rank per GPU: np 2 where two GPUs exist; on a one-GPU
    # machine np 1 (the plugin, its streams and a one-rank communicator).
    _run(None, min(2, torch.cuda.device_count()), "cuda", HOROVOD_ACCEL_PLUGINS=plugin)


def _jax_gpus():
    try:
        import jax  # noqa: PLC0415
        return len(jax.devices("gpu"))
    except Exception:  # no jax, or no GPU backend in it
        return 0


@pytest.mark.skipif(not torch.cuda.is_available() or not _jax_gpus(),
                    reason="no JAX CUDA backend with a GPU here: JAX arrays on a GPU run on GPU "
                           "machines (the CPU platform is covered by test_jax_jit.py)")
def test_cuda_jax_inside_jit():
    plugin = REPO / "build" / "devices" / "libhorovod_accel_cuda.so"
    subprocess.run(["bash", "-c", ". scripts/emulated_env.sh && _hvda_build csrc/devices "
                    "build/devices horovod_accel_cuda"], cwd=str(REPO), check=True, timeout=900)
    out = _run(None, min(2, _jax_gpus()), "cuda", script=JAX_SCRIPT,
               HOROVOD_ACCEL_PLUGINS=plugin)
    for name in ("allreduce_ops_dtypes_and_scales", "grouped_broadcast_reducescatter",
                 "gradient_and_train_step", "distributed_optimizer_step_on_device",
                 "allgather_inside_jit_is_refused_with_the_reason"):
        assert f"PASS {name}" in out


def _gcu_device_env(**extra):
    """The test 'gcu' torch device over the emulated runtime, without
    scripts/emulated_gcu.sh's plugin selection."""
    lib = emulated_build.build()
    site = REPO / "tests" / "emulated" / "torch_gcu" / "site"
    env = job_env(HOROVOD_GCU_RUNTIME_LIB=lib / "libtopsrt_emu.so", **extra)
    env["PYTHONPATH"] = f"{site}:{env['PYTHONPATH']}"
    return env


ERR_SCRIPT = ("import torch, horovod.torch as hvd\n"
              "hvd.init()\n"
              "try:\n"
              "    hvd.allreduce(torch.ones(2, device='gcu'))\n"
              "except ValueError as e:\n"
              "    print('ERR', e)\n")


@pytest.mark.parametrize("case", ["no_plugin", "missing_eccl"])
def test_device_tensor_without_usable_plugin_is_a_clear_error(case):
    """Without a usable plugin, a tensor on the device fails at enqueue with
    a message naming the device type and what to do; CPU work is unaffected."""
    extra = {}
    if case == "missing_eccl":
        plugin = REPO / "build" / "devices" / "libhorovod_accel_gcu.so"
        subprocess.run(["bash", "-c", ". scripts/emulated_env.sh && _hvda_build csrc/devices "
                        "build/devices horovod_accel_gcu"], cwd=str(REPO), check=True, timeout=900)
        extra = {"HOROVOD_ACCEL_PLUGINS": plugin, "HOROVOD_ECCL_LIB": "/nonexistent/libeccl.so"}
    r = subprocess.run([sys.executable, "-c", ERR_SCRIPT + "print('CPU', hvd.allreduce("
                        "torch.ones(2)).tolist())\n"], env=_gcu_device_env(**extra),
                       capture_output=True, text=True, timeout=300, cwd=str(REPO))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "CPU [1.0, 1.0]" in r.stdout, r.stdout + r.stderr
    if case == "no_plugin":
        assert "no device plugin for 'gcu' is loaded" in r.stdout, r.stdout
        assert "HOROVOD_ACCEL_PLUGINS" in r.stdout, r.stdout
    else:
        assert "HOROVOD_ECCL_LIB" in r.stdout and "not usable" in r.stdout, r.stdout + r.stderr
