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
import os
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


LIB = REPO / "horovod_accel" / "tensorflow" / "libhvda_tf_ops.so"


def _tf_framework_library():
    """The libtensorflow_framework.so.2 of the installed tensorflow (found
    without importing it: importing takes seconds)."""
    spec = importlib.util.find_spec("tensorflow")
    return Path(spec.submodule_search_locations[0]) / "libtensorflow_framework.so.2"


def _dynamic_symbols(lib, *flags):
    out = subprocess.run(["nm", "-D", "--with-symbol-versions", *flags, str(lib)],
                         capture_output=True, text=True, check=True).stdout
    return [ln.split() for ln in out.splitlines() if ln.strip()]


def test_library_uses_only_the_tf_c_api():
    # One build serves every TF 2.x, and the build needs no TensorFlow
    # (docs/design/tensorflow.md): the op library imports only unversioned
    # TF_* C functions (resolved in TensorFlow's libtensorflow_framework.so.2,
    # its only TensorFlow dependency, named by soname, with no run path) plus
    # versioned libc / libstdc++ / libgcc symbols, and exports only what
    # Python calls. The device kernels' TF functions are weak references
    # ("w": a TensorFlow without them still loads the library).
    undefined = [f[-1] for f in _dynamic_symbols(LIB, "--undefined-only")
                 if f[0] == "U" or f[-1].startswith("TF_")]
    weak = sorted(f[-1] for f in _dynamic_symbols(LIB, "--undefined-only")
                  if f[0] == "w" and f[-1].startswith("TF_"))
    assert weak == ["TF_GetDeviceId", "TF_GetDeviceName", "TF_GetStream"], weak
    tf = [u for u in undefined if u.startswith("TF_")]
    assert tf and all("@" not in u for u in tf), f"TF symbols must be unversioned: {tf}"
    runtime = re.compile(r".+@(GLIBC|GLIBCXX|CXXABI|GCC)_[0-9.]+$")
    other = [u for u in undefined if u not in tf and not runtime.fullmatch(u)]
    assert not other, f"symbols from neither TensorFlow's C API nor the C/C++ runtime: {other}"
    dynamic = subprocess.run(["readelf", "-d", str(LIB)], capture_output=True, text=True,
                             check=True).stdout
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[(.+)\]", dynamic))
    assert "libtensorflow_framework.so.2" in needed, dynamic
    assert needed <= {"libtensorflow_framework.so.2", "libstdc++.so.6", "libgcc_s.so.1",
                      "libc.so.6", "libm.so.6"}, dynamic
    assert "RPATH" not in dynamic and "RUNPATH" not in dynamic, dynamic
    exported = [f[-1] for f in _dynamic_symbols(LIB, "--defined-only") if f[1] == "T"]
    assert exported == ["hvda_tf_device_kernels_available", "hvda_tf_register_device_kernels",
                        "hvda_tf_set_core_api"], exported


def test_tensorflow_exports_every_function_the_library_imports():
    # What the build-time stub promised: TensorFlow's own
    # libtensorflow_framework.so.2 defines each imported TF_* function, without
    # a symbol version (an unversioned reference binds to it).
    imported = {f[-1] for f in _dynamic_symbols(LIB, "--undefined-only") if f[-1].startswith("TF_")}
    defined = {f[-1] for f in _dynamic_symbols(_tf_framework_library(), "--defined-only")
               if f[1] in "TW"}
    missing = sorted(s for s in imported if s not in defined)
    assert not missing, f"not exported (unversioned) by {_tf_framework_library()}: {missing}"


def test_c_api_declarations_match_tensorflow(tmp_path):
    # csrc/tensorflow/check/tf_c_api_check.cc compiles our declaration lists
    # against the installed TensorFlow's C headers (types, enum values,
    # layouts), links every listed function from libtensorflow_framework.so.2
    # and checks our TF_TString reader against TensorFlow's.
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    tf_lib = _tf_framework_library()
    include = tf_lib.parent / "include"
    exe = tmp_path / "tf_c_api_check"
    r = run([cxx, "-std=c++17", "-Wall", "-Werror", "-I", include,
             REPO / "csrc" / "tensorflow" / "check" / "tf_c_api_check.cc", "-o", exe, tf_lib,
             f"-Wl,-rpath,{tf_lib.parent}"], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    r = run([exe], timeout=120, TF_CPP_MIN_LOG_LEVEL=3)
    assert r.returncode == 0 and "TF C API CHECK OK" in r.stdout, r.stdout + r.stderr


BINDINGS = r"""
import ctypes, os, sys
import horovod_accel.tensorflow  # loads the op library through tf.load_op_library
lib, names = sys.argv[1], sys.argv[2:]
libc = ctypes.CDLL(None)
libc.dlsym.restype = ctypes.c_void_p
libc.dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
class Info(ctypes.Structure):
    _fields_ = [("fname", ctypes.c_char_p), ("fbase", ctypes.c_void_p),
                ("sname", ctypes.c_char_p), ("saddr", ctypes.c_void_p)]
libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(Info)]
handle = ctypes.CDLL(lib, mode=os.RTLD_NOLOAD | os.RTLD_NOW)._handle
for name in names:
    info = Info()
    addr = libc.dlsym(handle, name.encode())
    assert addr and libc.dladdr(addr, ctypes.byref(info)), name
    print("BIND", name, os.path.realpath(info.fname.decode()))
maps = open("/proc/self/maps").read().splitlines()
print("MAPPED", sorted({os.path.realpath(m.split()[-1]) for m in maps
                        if m.endswith("libtensorflow_framework.so.2")}))
"""


def test_symbols_bind_to_tensorflows_own_library():
    # In a real process, the op library's DT_NEEDED libtensorflow_framework.so.2
    # is the copy TensorFlow loaded (matched by soname; there is one such
    # library mapped), and each TF_* function the library imports resolves
    # there -- dlsym through the library's own handle searches it and its
    # dependencies, as the loader does for its references.
    imported = sorted({f[-1] for f in _dynamic_symbols(LIB, "--undefined-only")
                       if f[-1].startswith("TF_")})
    r = run([sys.executable, "-c", BINDINGS, LIB, *imported], timeout=180, TF_CPP_MIN_LOG_LEVEL=3)
    assert r.returncode == 0, r.stdout + r.stderr
    tf_lib = os.path.realpath(_tf_framework_library())
    bound = dict(re.findall(r"^BIND (\S+) (\S+)$", r.stdout, re.M))
    assert set(bound) == set(imported), r.stdout
    assert set(bound.values()) == {tf_lib}, r.stdout
    assert f"MAPPED ['{tf_lib}']" in r.stdout, r.stdout


UINT16 = r"""
import numpy as np
import tensorflow as tf
import horovod.tensorflow as hvd
hvd.init()
r, n = hvd.rank(), hvd.size()
base = np.arange(6, dtype=np.uint16)
x = tf.constant(base + r)
def ops():
    return (hvd.allreduce(x, op=hvd.Sum, name="u16.sum"), hvd.allgather(x, name="u16.gather"),
            hvd.broadcast(x, root_rank=n - 1, name="u16.bcast"), hvd.alltoall(x, name="u16.a2a"),
            hvd.reducescatter(x, op=hvd.Sum, name="u16.rs"),
            hvd.grouped_allreduce([x, x], op=hvd.Max, name="u16.group"))
for mode, fn in (("eager", ops), ("function", tf.function(ops))):
    s, g, b, a, rs, grp = fn()
    a = a[0] if isinstance(a, (tuple, list)) else a
    for t in (s, g, b, a, rs, *grp):
        assert t.dtype == tf.uint16, t
    assert (s.numpy() == n * base + sum(range(n))).all(), s
    assert (g.numpy() == np.concatenate([base + i for i in range(n)])).all(), g
    assert (b.numpy() == base + n - 1).all(), b
    assert a.shape[0] == 6 and rs.shape[0] == 6 // n, (a, rs)
    assert (grp[1].numpy() == base + n - 1).all(), grp
    print(f"UINT16 OK {mode} rank {r}", flush=True)
"""


def test_uint16_ops(tmp_path):
    # uint16 (upstream's TF ops accept it for allgather, broadcast, alltoall;
    # we accept it for the reductions too): eager and tf.function, 2 ranks.
    script = tmp_path / "uint16_ops.py"
    script.write_text(UINT16)
    r = horovodrun_script(2, script, timeout=HARD_TIMEOUT, TF_CPP_MIN_LOG_LEVEL=3)
    assert r.returncode == 0, r.stdout + r.stderr
    for rank in range(2):
        for mode in ("eager", "function"):
            assert f"[{rank}]<stdout>:UINT16 OK {mode} rank {rank}" in r.stdout, r.stdout + r.stderr


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


def _deadlock_job_ok(r, mode, np_):
    assert r.returncode == 0, f"exit {r.returncode}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"
    for rank in range(np_):
        assert f"[{rank}]<stdout>:TF-DEADLOCK-OK {mode} rank {rank}" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("np_", [2, 3])
def test_eager_deadlock_fails_every_rank(np_):
    # Eager kernels wait on the calling thread through the core's
    # enqueue_wait, so a rank blocked in an eager op counts as waiting: a
    # collective only some ranks submit (and opposite orders under
    # asynchronous eager execution, and an eager barrier against an eager
    # allreduce) fails on every rank with the core's
    # "Deadlock detected" error, within the script's deadline; a rank that
    # computes longer than the timeout is not a deadlock (tf_scripts/deadlock.py).
    r = horovodrun_script(np_, SCRIPTS / "deadlock.py", "eager", timeout=HARD_TIMEOUT,
                          TF_CPP_MIN_LOG_LEVEL=3, HOROVOD_DEADLOCK_TIMEOUT_SECONDS=2)
    _deadlock_job_ok(r, "eager", np_)
    waits = [float(w) for line in re.findall(r"DEADLOCK-WAITS rank \d+: ([\d. ]+)", r.stdout)
             for w in line.split()]
    assert len(waits) == 3 * np_, r.stdout


@pytest.mark.parametrize("np_", [2, 3])
def test_function_deadlock_is_ended_by_the_stall_inspector(np_):
    # The limit: graph kernels (tf.function) stay asynchronous, so no rank is
    # blocked in Horovod and the deadlock detection cannot fire, however short
    # its timeout (1 s here); the stall inspector's shutdown fails the lone
    # collective on every rank instead, also when one rank waits eagerly.
    r = horovodrun_script(np_, SCRIPTS / "deadlock.py", "function", timeout=HARD_TIMEOUT,
                          TF_CPP_MIN_LOG_LEVEL=3, HOROVOD_DEADLOCK_TIMEOUT_SECONDS=1,
                          HOROVOD_STALL_CHECK_TIME_SECONDS=1, HOROVOD_STALL_SHUTDOWN_TIME_SECONDS=4)
    _deadlock_job_ok(r, "function", np_)
    assert "Deadlock detected" not in r.stdout + r.stderr, r.stdout + r.stderr
