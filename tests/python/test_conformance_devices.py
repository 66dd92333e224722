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


def run_conformance(script, device, np_, *args, script_path=None, **env):
    """The suite at np_ ranks under scripts/<script> with --device device
    --quick plus args; returns (CompletedProcess, passed, failed, output).
    script_path: a script to run instead of `-m horovod_accel.conformance`
    (it must call the suite's main with its arguments)."""
    suite = [str(script_path)] if script_path else ["-m", "horovod_accel.conformance"]
    cmd = ["bash", str(REPO / "scripts" / script), sys.executable, "-m",
           "horovod_accel.runner.launch", "-np", str(np_), sys.executable, *suite,
           "--device", device, "--quick", *args]
    try:
        r = subprocess.run(cmd, env=job_env(**env), capture_output=True, text=True, timeout=600,
                           cwd=str(REPO))
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"conformance on {device} at np {np_} did not finish in 600 s:\n"
                    f"{e.stdout}\n{e.stderr}")
    out = r.stdout + r.stderr
    final = re.findall(r"conformance: (\d+) passed, (\d+) failed", r.stdout)
    assert final, out[-6000:]
    passed, failed = map(int, final[-1])
    return r, passed, failed, out


def assert_conformant(script, device, np_, *args, plugin_type=None, **env):
    """0 failed, more than 500 passed, exit 0; every unsupported case is an
    int16 reduction (what ECCL and NCCL lack); and the proof line shows the
    plugin serving plugin_type (default: device) ran collectives."""
    r, passed, failed, out = run_conformance(script, device, np_, *args, **env)
    assert failed == 0 and passed > 500, out[-6000:]
    assert r.returncode == 0, out[-6000:]
    unsupported = re.search(r"conformance: \d+ unsupported: (.*)", r.stdout)
    if unsupported:
        for name in unsupported.group(1).split(", "):
            assert "int16" in name or "all-dtypes" in name, name
    # the refusals name int16 (the all-dtypes batch too)
    for detail in re.findall(r"UNSUPPORTED \S+: (.*)", r.stdout):
        assert "of int16 with" in detail, detail
    ran = re.search(rf"collectives rank 0 ran in the '{plugin_type or device}' plugin: (.*)",
                    r.stdout)
    assert ran and "allreduce" in ran.group(1) and "alltoall" in ran.group(1), out[-3000:]
    return r


def assert_broken_sum_caught(r, failed, out):
    """A Sum that adds twice: the run fails (exit 1) and the failures are
    Sum-based cases with wrong values."""
    assert r.returncode == 1 and failed > 0, out[-6000:]
    names = re.findall(r"^\[0\]<stdout>:FAILED (\S+)$", r.stdout, re.M)
    assert names and all("/sum/" in n or "/average/" in n for n in names), names
    assert "values differ" in r.stdout, out[-3000:]


@pytest.mark.parametrize("np_", [1, 2, 3, 4])
def test_conformance_on_emulated_gcu(np_):
    assert_conformant("emulated_gcu.sh", "gcu", np_)


@pytest.mark.parametrize("np_", [1, 2, 3, 4])
def test_conformance_on_emulated_cuda(np_):
    assert_conformant("emulated_cuda.sh", "emucuda", np_)


@pytest.mark.parametrize("np_", [2, 3])
def test_conformance_in_plugin_memory_on_emulated_gcu(np_):
    """--memory plugin: buffers from the GCU plugin's mem_alloc, no torch
    device involved; the same verdicts as with the torch device."""
    assert_conformant("emulated_gcu.sh", "gcu", np_, "--memory", "plugin")


@pytest.mark.parametrize("memory", ["framework", "plugin"])
def test_a_wrong_sum_in_the_vendor_library_fails_the_suite(memory):
    """HVDA_EMU_BROKEN_SUM=1 makes the emulated ECCL's Sum add 2x: the GCU
    plugin is then wrong, and the suite must say so in either memory mode."""
    r, _, failed, out = run_conformance("emulated_gcu.sh", "gcu", 2, "--memory", memory,
                                        HVDA_EMU_BROKEN_SUM=1)
    assert_broken_sum_caught(r, failed, out)


def test_one_sided_failure_in_plugin_memory_fails_only_that_case(tmp_path):
    """Rank 1 never submits one case's allreduce: the deadlock ends the
    generation, every rank re-initializes (plugin memory stays usable) and
    every later case still passes, with the plugin proof."""
    from test_conformance import _INJECT  # noqa: PLC0415 (the same injection as on the CPU)
    script = tmp_path / "inject.py"
    script.write_text(_INJECT)
    r, passed, failed, out = run_conformance(
        "emulated_gcu.sh", "gcu", 3, "--memory", "plugin", "--filter", "allreduce/",
        script_path=script, HOROVOD_DEADLOCK_TIMEOUT_SECONDS=2)
    assert r.returncode == 1 and failed == 1 and passed > 100, out[-6000:]
    assert "FAILED allreduce/sum/int8/n=1031/ps=global\n" in r.stdout, out[-3000:]
    assert "rank 1: RuntimeError: injected: rank 1 fails before submitting" in r.stdout, out[-3000:]


def test_an_op_that_bypasses_the_plugin_fails_the_proof():
    """Right values are not enough: allreduce detoured through the CPU path
    (device_scripts/conformance_cpu_detour.py) gives correct results, and
    every allreduce case that moved data must fail the proof on every rank,
    naming the plugin; the other ops still pass."""
    r, passed, failed, out = run_conformance(
        "emulated_gcu.sh", "gcu", 2, "--memory", "plugin",
        script_path=REPO / "tests" / "python" / "device_scripts" / "conformance_cpu_detour.py")
    assert r.returncode == 1 and failed > 0 and passed > 300, out[-6000:]
    names = re.findall(r"^\[0\]<stdout>:FAILED (\S+)$", r.stdout, re.M)
    assert names and all(n.startswith("allreduce/") for n in names), names
    assert "no collective ran in the 'gcu' device plugin" in r.stdout, out[-3000:]
    assert "ranks 0,1: the values are right" in r.stdout, out[-3000:]
