"""horovod.mxnet on MXNet 1.9.1, multi-process through the real launcher.

MXNet 1.9.1 needs numpy<1.24, which the main venv's torch and TensorFlow
cannot share, so the jobs' workers run on the MXNet venv's python
(.venv-mxnet, made by scripts/setup_mxnet.sh) while this module and the
launcher run in the main venv's pytest; the workers import the same built
core (PYTHONPATH=<repo>). Without .venv-mxnet the module is skipped.

- mxnet_scripts/ops_checks.py at np 1, 2, 3: every op and dtype, in place
  and out of place, process sets, zero-length tensors, engine ordering and
  non-blocking pushes, errors;
- mxnet_scripts/training_checks.py at np 1, 2, 3: broadcast_parameters,
  DistributedTrainer / DistributedOptimizer (gluon.Trainer and Module) equal
  to single-process training, the seeds' Module.fit shape on digits;
- the two examples at np 2 (test accuracy above 90%);
- the engine library: no MXNet symbol or library among its dependencies,
  and mx_abi.h checked against the installed MXNet's own headers;
- `import horovod.mxnet` is horovod_accel.mxnet and imports no other framework.
Every job has a hard timeout.
"""
import re
import shutil
import subprocess

import pytest

from launch_util import REPO, assert_every_rank_passed, check_names, horovodrun, run, tail

MX_PYTHON = REPO / ".venv-mxnet" / "bin" / "python"
SCRIPTS = REPO / "tests" / "python" / "mxnet_scripts"
LIBRARY = REPO / "horovod_accel" / "mxnet" / "libhvda_mxnet.so"
TIMEOUT = 180

if not MX_PYTHON.exists():
    pytest.skip("the MXNet venv .venv-mxnet is missing: create it with "
                "`bash scripts/setup_mxnet.sh`", allow_module_level=True)


@pytest.fixture(scope="module", autouse=True)
def engine_library_is_built():
    assert LIBRARY.exists(), (f"{LIBRARY} is not built: run `bash scripts/setup_mxnet.sh` "
                              f"(it builds csrc/mxnet without MXNet)")


def mx_job(np_, script, *args, timeout=TIMEOUT):
    return horovodrun(["-np", np_, MX_PYTHON, script, *args], timeout)


@pytest.mark.parametrize("np_", [1, 2, 3])
def test_ops(np_):
    script = SCRIPTS / "ops_checks.py"
    names = check_names(script)
    assert len(names) >= 15, names
    assert_every_rank_passed(mx_job(np_, script), np_, names)


@pytest.mark.parametrize("np_", [1, 2, 3])
def test_training(np_):
    script = SCRIPTS / "training_checks.py"
    names = check_names(script)
    assert len(names) >= 7, names
    assert_every_rank_passed(mx_job(np_, script), np_, names)


@pytest.mark.parametrize("example", ["mxnet_gluon_mnist.py", "mxnet_module_mnist.py"])
def test_example_trains_to_90_percent(example):
    r = mx_job(2, REPO / "examples" / "mxnet" / example)
    assert r.returncode == 0, f"{example} failed" + tail(r)
    losses = [float(v) for v in re.findall(r"^\[0\]<stdout>:epoch \d+: \S+ ([\d.]+)$", r.stdout,
                                           re.M)]
    assert len(losses) >= 2 and losses[-1] < losses[0], f"{example}: loss did not fall" + tail(r)
    m = re.search(r"^\[0\]<stdout>:final test accuracy ([\d.]+)%", r.stdout, re.M)
    assert m and float(m.group(1)) > 90, f"{example}: no accuracy above 90%" + tail(r)


def test_engine_library_has_no_mxnet_dependency():
    needed = subprocess.run(["readelf", "-d", LIBRARY], capture_output=True, text=True,
                            check=True).stdout
    libs = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", needed))
    system = re.compile(r"(libstdc\+\+|libm|libgcc_s|libc|ld-linux[-\w]*)\.so\.\d+")
    assert libs and all(system.fullmatch(lib) for lib in libs), libs
    symbols = subprocess.run(["nm", "-D", LIBRARY], capture_output=True, text=True,
                             check=True).stdout
    undefined_mx = re.findall(r"^\s+U (MX\w+)", symbols, re.M)
    assert not undefined_mx, f"the library links MXNet functions: {undefined_mx}"
    exported = set(re.findall(r"^[0-9a-f]+ T (\w+)$", symbols, re.M))
    assert exported == {"hvda_mx_bind", "hvda_mx_push", "hvda_mx_end_epoch",
                        "hvda_mx_last_error"}, exported


@pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler")
def test_abi_declarations_match_the_installed_mxnet_headers():
    include = run([MX_PYTHON, "-c", "import mxnet, os; print(os.path.join(os.path.dirname("
                   "mxnet.__file__), 'include'))"], 60).stdout.strip()
    r = run(["g++", "-std=c++17", "-fsyntax-only", "-DMSHADOW_USE_MKL=0", "-DMSHADOW_USE_CBLAS=0",
             "-DMSHADOW_USE_CUDA=0", f"-I{include}", REPO / "csrc" / "mxnet" / "check" /
             "mx_abi_check.cc"], 120)
    assert r.returncode == 0, "csrc/mxnet/mx_abi.h differs from MXNet's headers:\n" + r.stderr


def test_alias_resolves_and_no_other_framework_is_imported():
    r = run([MX_PYTHON, "-c", "import sys, horovod.mxnet as hvd, horovod_accel.mxnet as m; "
             "print(hvd is m, sorted({n.split('.')[0] for n in sys.modules} & "
             "{'torch', 'tensorflow', 'keras'}))"], 60)
    assert r.returncode == 0 and r.stdout.split() == ["True", "[]"], r.stdout + r.stderr
