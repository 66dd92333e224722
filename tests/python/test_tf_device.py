"""horovod.tensorflow on a TensorFlow PluggableDevice: the emulated "GCU"
device (tests/emulated/tf_gcu, a PluggableDevice library over the emulated
TOPS runtime) with the GCU device plugin over the emulated TOPS runtime +
ECCL (scripts/emulated_gcu.sh). tf_device_scripts/device_ops.py runs every
collective on GCU tensors in eager mode, in tf.function and in TF1 graphs,
and checks per op that it ran in the plugin, left its results on the
device, and copied no payload between host and device. Every job has a hard
timeout.
"""
import importlib.util
import re
import sys
from pathlib import Path

import pytest

import emulated_build
from launch_util import REPO, run

pytestmark = pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                                reason="tensorflow is not installed (scripts/setup.sh installs "
                                       "tensorflow-cpu==2.21.0)")

SCRIPTS = Path(__file__).resolve().parent / "tf_device_scripts"
HARD_TIMEOUT = 300
CHECKS = re.findall(r"@check\ndef (\w+)\(", (SCRIPTS / "device_ops.py").read_text())


@pytest.fixture(scope="module")
def tf_plugin():
    return emulated_build.tf_device_library()


def run_script(np_, script, mode, plugin, **env):
    """tf_device_scripts/<script> <mode> at np_ ranks under scripts/emulated_gcu.sh (the
    GCU device plugin over the emulated stack), within HARD_TIMEOUT."""
    cmd = ["bash", str(REPO / "scripts" / "emulated_gcu.sh"), sys.executable, "-m",
           "horovod_accel.runner.launch", "-np", str(np_), sys.executable,
           str(SCRIPTS / script), mode]
    return run(cmd, HARD_TIMEOUT, HVDA_TEST_TF_PLUGIN=str(plugin),
               HVDA_TEST_EMU_CORE=str(emulated_build.LIB_DIR / "libhvda_emu_core.so"),
               TF_CPP_MIN_LOG_LEVEL=3, **env)


def run_job(np_, mode, plugin, **env):
    return run_script(np_, "device_ops.py", mode, plugin, **env)


def assert_all_checks_passed(r, np_):
    out = r.stdout + r.stderr
    assert r.returncode == 0, f"exit {r.returncode}\n{out[-8000:]}"
    for rank in range(np_):
        passed = set(re.findall(rf"^\[{rank}\]<stdout>:PASS (\w+)$", r.stdout, re.M))
        assert passed == set(CHECKS), f"rank {rank} missing {set(CHECKS) - passed}\n{out[-6000:]}"


@pytest.mark.parametrize("mode,np_", [("eager", 1), ("eager", 2), ("eager", 3),
                                      ("function", 2), ("function", 3),
                                      ("graph", 2), ("graph", 3)])
def test_every_collective_runs_on_the_device(tf_plugin, mode, np_):
    assert_all_checks_passed(run_job(np_, mode, tf_plugin), np_)


@pytest.mark.parametrize("mode", ["eager", "function"])
def test_collectives_wait_for_tensorflows_stream(tf_plugin, mode):
    """allreduce_reads_what_the_device_just_computed with every stream
    operation of the emulated runtime delayed by 300 ms, far longer than a
    negotiation: a collective that did not wait for the MatMul TF enqueued on
    its stream would read stale device memory."""
    check = "allreduce_reads_what_the_device_just_computed"
    r = run_job(2, mode, tf_plugin, HVDA_EMU_STREAM_DELAY_US=300000, HVDA_TEST_ONLY_CHECK=check)
    out = r.stdout + r.stderr
    assert r.returncode == 0, f"exit {r.returncode}\n{out[-8000:]}"
    for rank in range(2):
        assert f"[{rank}]<stdout>:PASS {check}" in r.stdout, out[-6000:]


@pytest.mark.parametrize("mode,np_", [("tape", 2), ("graph", 3)])
def test_training_with_variables_and_gradients_on_the_device(tf_plugin, mode, np_):
    """tf_device_scripts/training.py: DistributedGradientTape (eager), and the
    TF1 DistributedOptimizer + BroadcastGlobalVariablesHook pattern; the
    loss falls and the weights agree on every rank."""
    r = run_script(np_, "training.py", mode, tf_plugin)
    out = r.stdout + r.stderr
    assert r.returncode == 0, f"exit {r.returncode}\n{out[-8000:]}"
    for rank in range(np_):
        assert f"[{rank}]<stdout>:TRAINING OK rank {rank}" in r.stdout, out[-6000:]


def test_a_device_no_plugin_serves_keeps_the_cpu_kernels(tf_plugin):
    """Without the GCU device plugin the ops on GCU tensors still work (TF
    runs the CPU kernels, copying), and rank 0 says why once, at INFO."""
    r = run([sys.executable, "-m", "horovod_accel.runner.launch", "-np", "2", sys.executable,
             str(SCRIPTS / "no_plugin.py")], HARD_TIMEOUT, HVDA_TEST_TF_PLUGIN=str(tf_plugin),
            TF_CPP_MIN_LOG_LEVEL=3, HOROVOD_LOG_LEVEL="INFO", HOROVOD_ACCEL_PLUGINS="")
    out = r.stdout + r.stderr
    assert r.returncode == 0, f"exit {r.returncode}\n{out[-8000:]}"
    for rank in range(2):
        assert f"[{rank}]<stdout>:NO PLUGIN OK rank {rank}" in r.stdout, out[-6000:]
    said = re.findall(r"^\[(\d)\]<stderr>:TensorFlow device GCU: no horovod_accel device plugin",
                      r.stderr, re.M)
    assert said == ["0"], out[-6000:]
