"""horovod.tensorflow's op layer (csrc/tensorflow + horovod_accel/tensorflow/
mpi_ops.py) through the real launcher at world sizes 1, 2 and 3.

tf_scripts/ops_matrix.py runs every op x dtype (zero-length and odd sizes
included), gradients, named mismatch errors, process sets, join and barrier
in one job per (mode, world size): eager, tf.function, and TF1 graphs
(tf.compat.v1 with v2 behaviour disabled, in its own process). TensorFlow's
import costs seconds, so the matrix is batched into few jobs. Every job has a
hard timeout.
"""
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from launch_util import REPO, horovodrun_script, run

pytestmark = pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None,
                                reason="tensorflow is not installed (scripts/setup.sh installs "
                                       "tensorflow-cpu==2.21.0)")

SCRIPTS = Path(__file__).resolve().parent / "tf_scripts"
HARD_TIMEOUT = 240
CHECKS = re.findall(r"@check\ndef (\w+)\(", (SCRIPTS / "ops_matrix.py").read_text())


def _lib_built():
    return (REPO / "horovod_accel" / "tensorflow" / "libhvda_tf_ops.so").exists()


def assert_all_ranks_ok(r, np_):
    assert r.returncode == 0, f"exit {r.returncode}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"
    for rank in range(np_):
        assert f"[{rank}]<stdout>:ALL OK rank {rank}" in r.stdout, r.stdout + r.stderr
        passed = set(re.findall(rf"^\[{rank}\]<stdout>:PASS (\w+)$", r.stdout, re.M))
        assert passed == set(CHECKS), f"rank {rank} missing {set(CHECKS) - passed}"


@pytest.fixture(autouse=True)
def _need_library():
    if not _lib_built():
        pytest.fail("horovod_accel/tensorflow/libhvda_tf_ops.so is not built although tensorflow "
                    "is installed: run `pip install -e .` or `cmake --build build/python "
                    "--target hvda_tf_ops`")


@pytest.mark.parametrize("np_", [1, 2, 3])
@pytest.mark.parametrize("mode", ["eager", "function", "graph"])
def test_ops_matrix(mode, np_):
    r = horovodrun_script(np_, SCRIPTS / "ops_matrix.py", mode, timeout=HARD_TIMEOUT,
                          TF_CPP_MIN_LOG_LEVEL=3)
    assert_all_ranks_ok(r, np_)


def test_lost_peer_is_an_error_not_a_hang():
    r = horovodrun_script(2, SCRIPTS / "peer_loss.py", timeout=120, TF_CPP_MIN_LOG_LEVEL=3)
    assert "[0]<stdout>:PEER-LOSS-OK" in r.stdout, r.stdout + r.stderr
    assert "RAISED eager AbortedError" in r.stdout and "RAISED function AbortedError" in r.stdout


def test_library_uses_only_the_tf_c_api():
    # One build serves every TF 2.x: the op library imports only C symbols
    # (TF_*) from TensorFlow and exports only its setter.
    lib = REPO / "horovod_accel" / "tensorflow" / "libhvda_tf_ops.so"
    undefined = subprocess.run(["nm", "-D", "--undefined-only", str(lib)], capture_output=True,
                               text=True, check=True).stdout
    cxx_tf = [ln for ln in undefined.splitlines() if "tensorflow" in ln or "_ZN3tsl" in ln]
    assert not cxx_tf, f"C++ TensorFlow symbols used: {cxx_tf}"
    exported = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True,
                              text=True, check=True).stdout
    assert re.findall(r" T (\S+)", exported) == ["hvda_tf_set_core_api"], exported


def test_missing_library_message(tmp_path):
    # Importing without the built library names the fix (build command).
    code = ("import sys, types, importlib.util, os\n"
            "spec = importlib.util.spec_from_file_location('m', "
            f"r'{REPO}/horovod_accel/tensorflow/mpi_ops.py')\n"
            "m = importlib.util.module_from_spec(spec)\n"
            "import horovod_accel.tensorflow.mpi_ops as real\n"
            f"m.__file__ = r'{tmp_path}/mpi_ops.py'\n"
            "src = open(spec.origin).read().split('MPI_LIB = _load_library()')[0]\n"
            f"exec(compile(src, r'{tmp_path}/mpi_ops.py', 'exec'), m.__dict__)\n"
            "try:\n    m._load_library()\nexcept ImportError as e:\n    print('ERR', e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=str(REPO), env={"PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3",
                                           "PATH": "/usr/bin:/bin"})
    assert "ERR" in r.stdout and "not built" in r.stdout and "hvda_tf_ops" in r.stdout, \
        r.stdout + r.stderr


def test_ops_matrix_under_mpirun():
    # Launched by mpirun instead of horovodrun (docs/design/mpi.md): hvd.init()
    # forms the job from MPI, and the TF ops run over it like under horovodrun.
    # Open MPI does not prefix the ranks' output, so each check's line is counted.
    exe = shutil.which("mpirun.openmpi")
    if exe is None:
        pytest.skip("mpirun.openmpi is not installed (scripts/setup.sh installs openmpi-bin)")
    r = run([exe, "--allow-run-as-root", "--oversubscribe", "-np", "2", sys.executable,
             SCRIPTS / "ops_matrix.py", "eager"], timeout=HARD_TIMEOUT, TF_CPP_MIN_LOG_LEVEL=3)
    assert r.returncode == 0, f"exit {r.returncode}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"
    for rank in range(2):
        assert f"ALL OK rank {rank}" in r.stdout, r.stdout + r.stderr
    for check in CHECKS:  # the ranks' lines may interleave mid-line
        passes = re.findall(rf"PASS {check}(?![a-z0-9_])", r.stdout)
        assert len(passes) == 2, f"{check} did not pass on both ranks:\n" + r.stdout
