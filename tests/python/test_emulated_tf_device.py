"""The emulated TF PluggableDevice "GCU" (tests/emulated/tf_gcu/, README.md
there) and the engine entry points it rests on: the kernel-launch primitive
and the copy counters (emu_kernel_check, no TensorFlow needed), the
plugin's exports, and tf_gcu_check.py's checks run inside one TensorFlow
process - devices, MatMul/AddV2/Sub/Mul against NumPy, a gradient that
stays on the device, copy counts, variable updates, tf.function - once as
is and once with every stream operation delayed. Every process runs under a
hard timeout; TensorFlow is never imported here."""
import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest

import emulated_build

TIMEOUT = 300  # seconds, for one process (TensorFlow's import is most of it)
DEVICE_COUNT = 2
CHECK_SCRIPT = emulated_build.SOURCE_DIR / "tf_gcu" / "tf_gcu_check.py"
CHECKS = ["devices", "matmul", "elementwise", "zero_size", "gradient", "copy_counters",
          "variable_update", "tf_function", "native_stream_symbol"]
PLUGIN_EXPORTS = {"SE_InitPlugin", "TF_InitKernel", "hvda_tf_gcu_native_stream"}

needs_tf = pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                              reason="tensorflow is not installed for this Python")


def env(**extra):
    """This environment minus HOROVOD_* / HVDA_EMU_* / TF plugin paths, plus
    the device count and extra."""
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("HOROVOD_", "HVDA_EMU_", "TF_PLUGGABLE_DEVICE_LIBRARY_PATH"))}
    e["HVDA_EMU_DEVICE_COUNT"] = str(DEVICE_COUNT)
    e.update({k: str(v) for k, v in extra.items()})
    return e


def run(cmd, **extra):
    try:
        return subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                              timeout=TIMEOUT, env=env(**extra))
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{cmd[0]} ran past {TIMEOUT} s:\n{(e.stdout or '')[-4000:]}")


def run_checks(**extra):
    """{check: (passed, report)} of one tf_gcu_check.py process."""
    r = run([sys.executable, CHECK_SCRIPT, emulated_build.tf_device_library()], **extra)
    out = r.stdout
    results = {}
    for m in re.finditer(r"^(PASS|FAIL) (\S+)\n((?:(?!PASS |FAIL ).*\n)*)", out, re.M):
        results[m[2]] = (m[1] == "PASS", m[3])
    assert set(results) == set(CHECKS), (
        f"exit {r.returncode}; checks reported: {sorted(results)}\n"
        f"stdout:\n{out[-6000:]}\nstderr:\n{r.stderr[-6000:]}")
    return results


def test_kernel_primitive_and_copy_counters():
    r = run([emulated_build.program("emu_kernel_check")])
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"^4 tests, 0 failed$", r.stdout, re.M), r.stdout


@needs_tf
@pytest.mark.skipif(shutil.which("nm") is None, reason="needs nm (binutils)")
def test_plugin_exports_exactly_its_entry_points():
    out = subprocess.run(["nm", "-D", "--defined-only", str(emulated_build.tf_device_library())],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    functions = {line.split()[2] for line in out.splitlines()
                 if len(line.split()) == 3 and line.split()[1] == "T"}
    assert functions == PLUGIN_EXPORTS, sorted(functions ^ PLUGIN_EXPORTS)


@pytest.fixture(scope="module")
def check_results():
    return run_checks()


@needs_tf
@pytest.mark.parametrize("check", CHECKS)
def test_tf_gcu(check, check_results):
    passed, report = check_results[check]
    assert passed, report


@needs_tf
def test_tf_gcu_with_delayed_streams():
    """Each stream operation waits 2 ms first: results that depended on
    timing instead of stream order would come out stale."""
    results = run_checks(HVDA_EMU_STREAM_DELAY_US=2000)
    failed = {name: report for name, (passed, report) in results.items() if not passed}
    assert not failed, "\n".join(f"{n}:\n{r}" for n, r in failed.items())
