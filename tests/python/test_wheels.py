"""Packaging (docs/design/packaging.md): the wheels and the Dockerfiles.

scripts/build_wheels.sh builds the core wheel (C++ core + CPU device, Gloo
inside) and one plugin wheel per accelerator (horovod_accel_gcu,
horovod_accel_cuda) once per session (conftest.py); here
- every wheel carries a manylinux tag, and `auditwheel show` finds no library
  outside the manylinux policy (TensorFlow's own excepted);
- they are installed into a FRESH venv (no --system-site-packages, nothing
  from the source tree or .venv), which runs a 2-process job through its own
  `horovodrun`, from a folder outside the repository, using the core's
  collectives on numpy buffers (no framework), and `horovodrun --check-build`,
  which must list both plugins (unavailable here: no vendor runtime);
- order (a) of TensorFlow support, a plain isolated `pip install` of the
  sdist then tensorflow, compiles the core once more and runs only with
  HVDA_TEST_ISOLATED_INSTALL=1 (.ci/run sets it). Order (b), the core wheel
  then tensorflow, runs on a clean Debian 12 in test_wheels_in_container.py;
- scripts/lint_docker.sh lints every docker/Dockerfile.* with hadolint.

Marked `slow` (wheel builds take minutes on 2 cores): deselect with
`-m "not slow"`. Every subprocess runs under a hard timeout.
"""
import os
import re
import shutil
import sys
import tempfile
import time
import zipfile

import pytest

import emulated_build
from wheel_build import BUILD_TIMEOUT, PLUGINS, REPO, run, tail

INSTALL_TIMEOUT = 600
JOB_TIMEOUT = 180
TF_REQUIREMENT = "tensorflow-cpu==2.21.0"   # what scripts/setup.sh installs
TF_INSTALL_TIMEOUT = 900   # ~270 MB wheel plus its dependencies
TF_JOB = REPO / "tests" / "python" / "wheel_scripts" / "tf_tape_train.py"
MANYLINUX = re.compile(r"-manylinux_2_(\d+)_x86_64\.whl$")

pytestmark = pytest.mark.slow

# The job: only the core (no framework). Collectives go through the core
# runtime on numpy buffers; every rank checks its results and prints a line.
JOB = r'''
import sys
import numpy as np
import horovod
import horovod_accel
from horovod_accel import _core
from horovod_accel.common.basics import HorovodBasics
from horovod_accel.common.default_runtime import DEFAULT_RUNTIME

repo = sys.argv[1]
for mod in (horovod_accel, horovod, _core):
    assert not mod.__file__.startswith(repo), f"{mod.__name__} imported from the source tree: {mod.__file__}"

hvd = HorovodBasics()
hvd.init()
rank, size = hvd.rank(), hvd.size()
rt = DEFAULT_RUNTIME.initialized_runtime()
CPU = -1

x = np.full(6, rank + 1, dtype=np.float32)
out = np.empty_like(x)
w = rt.enqueue_allreduce("wheels.sum", 0, x.ctypes.data, out.ctypes.data, _core.DTYPE_FLOAT32,
                         list(x.shape), CPU, _core.OP_SUM, 1.0, 1.0)
w.wait()
w.release_name()
total = size * (size + 1) / 2
assert (out == total).all(), f"rank {rank}: allreduce gave {out}, expected {total}"

y = np.full(rank + 1, rank, dtype=np.int64)
w = rt.enqueue_allgather("wheels.gather", 0, y.ctypes.data, _core.DTYPE_INT64, list(y.shape), CPU)
w.wait()
got = np.frombuffer(w.output(), dtype=np.int64).copy()
w.release_name()
want = np.concatenate([np.full(r + 1, r, dtype=np.int64) for r in range(size)])
assert (got == want).all(), f"rank {rank}: allgather gave {got}, expected {want}"

b = np.full(3, float(rank), dtype=np.float64)
bout = np.empty_like(b)
w = rt.enqueue_broadcast("wheels.bcast", 0, b.ctypes.data, bout.ctypes.data, _core.DTYPE_FLOAT64,
                         list(b.shape), CPU, size - 1)
w.wait()
w.release_name()
assert (bout == size - 1).all(), f"rank {rank}: broadcast gave {bout}"

rt.enqueue_barrier(0).wait()
assert "torch" not in sys.modules, "the core must not import a framework"
print(f"WHEEL-JOB-OK rank={rank} size={size} sum={out[0]:g} core={_core.__file__}", flush=True)
hvd.shutdown()
'''


def clean_env(venv):
    """The environment of the fresh venv's commands: none of this checkout
    (PYTHONPATH, the outer venv) and no HOROVOD_* settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("HOROVOD_") and k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    outer = str(REPO / ".venv" / "bin")
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != outer]
    env["PATH"] = os.pathsep.join([str(venv / "bin")] + path)
    env["VIRTUAL_ENV"] = str(venv)
    env["PYTHONNOUSERSITE"] = "1"
    env["OMP_NUM_THREADS"] = "1"
    return env


@pytest.fixture(scope="module")
def venv(wheels, tmp_path_factory):
    """A fresh venv with the wheels (and cloudpickle, numpy) installed."""
    root = tmp_path_factory.mktemp("venv")
    venv = root / "venv"
    r = run([sys.executable, "-m", "venv", venv], INSTALL_TIMEOUT, cwd=str(root))
    assert r.returncode == 0, "python -m venv failed" + tail(r)
    env = clean_env(venv)
    pip = [venv / "bin" / "python", "-m", "pip", "--disable-pip-version-check"]
    # Only the local wheels for our packages (never an index's namesake),
    # then their dependencies from the index.
    r = run(pip + ["install", "-q", "--no-index", "--no-deps", *wheels.values()], INSTALL_TIMEOUT,
            cwd=str(root), env=env)
    assert r.returncode == 0, "installing the wheels failed" + tail(r)
    r = run(pip + ["install", "-q", "horovod_accel", "numpy"], INSTALL_TIMEOUT, cwd=str(root), env=env)
    assert r.returncode == 0, "installing the wheels' dependencies failed" + tail(r)
    return venv


def make_venv(root):
    """A fresh venv under root (no --system-site-packages) with cloudpickle;
    returns (venv, pip command, env)."""
    venv = root / "venv"
    r = run([sys.executable, "-m", "venv", venv], INSTALL_TIMEOUT, cwd=str(root))
    assert r.returncode == 0, "python -m venv failed" + tail(r)
    env = clean_env(venv)
    pip = [venv / "bin" / "python", "-m", "pip", "--disable-pip-version-check"]
    r = run(pip + ["install", "-q", "cloudpickle"], INSTALL_TIMEOUT, cwd=str(root), env=env)
    assert r.returncode == 0, "installing cloudpickle failed" + tail(r)
    return venv, pip, env


def install_tensorflow_later(venv, pip, env, root):
    """With horovod_accel installed and no TensorFlow: --check-build says
    `[ ] TensorFlow`; then installs tensorflow-cpu into the venv."""
    r = run([venv / "bin" / "horovodrun", "--check-build"], JOB_TIMEOUT, cwd=str(root), env=env)
    assert r.returncode == 0 and "[ ] TensorFlow" in r.stdout, tail(r)
    t0 = time.monotonic()
    # --no-compile: byte-compiling TensorFlow's thousands of modules at install
    # time costs more than the whole rest of the install (33 s vs 77-137 s on a
    # 2-core VM); the imports compile the few they use.
    r = run(pip + ["install", "-q", "--no-compile", TF_REQUIREMENT], TF_INSTALL_TIMEOUT,
            cwd=str(root), env=env)
    assert r.returncode == 0, f"installing {TF_REQUIREMENT} failed" + tail(r)
    print(f"\n{TF_REQUIREMENT} installed into {venv} in {time.monotonic() - t0:.0f} s")


def check_tensorflow_works(venv, tmp_path):
    """The venv's horovodrun runs wheel_scripts/tf_tape_train.py at np 2 with
    the venv's op library, and `horovodrun --check-build` shows `[X] TensorFlow`."""
    env = {**clean_env(venv), "TF_CPP_MIN_LOG_LEVEL": "3"}
    r = run([venv / "bin" / "horovodrun", "-np", "2", venv / "bin" / "python", TF_JOB, venv],
            JOB_TIMEOUT, cwd=str(tmp_path), env=env)
    assert r.returncode == 0, "the 2-process TensorFlow job failed" + tail(r)
    ok = dict(re.findall(r"TF-WHEEL-JOB-OK rank=(\d+) size=2 .* lib=(\S+)", r.stdout))
    assert set(ok) == {"0", "1"}, "both ranks must report success" + tail(r)
    for lib in ok.values():
        assert lib.startswith(str(venv)), f"op library {lib} is not the venv's" + tail(r)
    r = run([venv / "bin" / "horovodrun", "--check-build"], JOB_TIMEOUT, cwd=str(tmp_path), env=env)
    assert r.returncode == 0, "horovodrun --check-build failed" + tail(r)
    assert "[X] TensorFlow" in r.stdout, tail(r)


def auditwheel_show(whl):
    """`auditwheel show` of a wheel, from the packaging tools' venv that
    scripts/build_wheels.sh made."""
    tool = REPO / "build" / "wheel" / "tools" / "bin" / "auditwheel"
    r = run([tool, "show", whl], 120)
    assert r.returncode == 0, f"auditwheel show {whl.name} failed" + tail(r)
    return " ".join(r.stdout.split())


@pytest.mark.parametrize("name", ["horovod_accel"] + [f"horovod_accel_{p}" for p in PLUGINS])
def test_wheel_is_manylinux_2_28_with_no_outside_library(wheels, name):
    # The release toolchain (packaging/toolchain/zig.cmake) targets glibc 2.28;
    # auditwheel repair chose the tag from what the binaries need, and show
    # must agree and find nothing to vendor: Gloo and the C++ runtime are
    # inside the binaries.
    whl = wheels[name]
    m = MANYLINUX.search(whl.name)
    assert m and int(m.group(1)) <= 28, f"{whl.name}: expected a manylinux_2_28 (or older) tag"
    shown = auditwheel_show(whl)
    m = re.search(r'This constrains the platform tag to "manylinux_2_(\d+)_x86_64"', shown)
    assert m and int(m.group(1)) <= 28, shown
    # What each binary loads: the manylinux policy's system libraries only,
    # and TensorFlow's own library for the op library that runs inside it
    # (`auditwheel show` has no --exclude, so it counts that one against the
    # wheel: it is checked here instead).
    allowed = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
               "ld-linux-x86-64.so.2", "libgcc_s.so.1"}
    with zipfile.ZipFile(whl) as z, tempfile.TemporaryDirectory() as tmp:
        assert not any(".libs/" in n for n in z.namelist()), \
            f"{whl.name}: auditwheel had to vendor libraries: {z.namelist()}"
        libs = [n for n in z.namelist() if n.endswith(".so")]
        assert libs, z.namelist()
        for name in libs:
            path = z.extract(name, tmp)
            needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                                    run(["readelf", "-d", path], 60).stdout))
            extra = needed - allowed - ({"libtensorflow_framework.so.2"} if "libhvda_tf_ops" in name else set())
            assert not extra, f"{whl.name}: {name} needs {sorted(extra)} from the system"
            if "_core" in name or "libhorovod_accel_" in name:
                # glibc's tuned memcpy, not a toolchain runtime's copy linked
                # in (zig's compiler-rt brought one; docs/design/packaging.md).
                dyn = run(["readelf", "--dyn-syms", "-W", path], 60).stdout
                assert re.search(r"\bUND memcpy@", dyn), f"{whl.name}: {name} does not call glibc's memcpy"


def test_core_wheel_holds_the_core_and_no_framework(wheels):
    whl = wheels["horovod_accel"]
    assert MANYLINUX.search(whl.name), whl.name
    with zipfile.ZipFile(whl) as z:
        names = z.namelist()
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        eps = z.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert any(re.fullmatch(r"horovod_accel/_core\.cpython-[^/]+\.so", n) for n in names), names
    assert "horovod/__init__.py" in names and "horovod_accel/runner/launch.py" in names, names
    assert not any(n.startswith(("tests/", "csrc/", "packaging/")) for n in names), names
    shims = {"horovod_accel/libhvda_mpi_openmpi.so", "horovod_accel/libhvda_mpi_mpich.so"}
    assert shims <= set(names), f"the MPI shims (docs/design/mpi.md) are missing: {names}"
    # The TensorFlow op library uses TensorFlow's stable C API only and is
    # built without TensorFlow (docs/design/tensorflow.md; test_tf_ops checks
    # its imports), so one build serves every TF 2.x: every core wheel holds
    # it, and never the build-time stub libtensorflow_framework.so.2.
    tf_ops = "horovod_accel/tensorflow/libhvda_tf_ops.so"
    assert tf_ops in names, f"the TensorFlow op library is missing: {names}"
    assert not any("tensorflow_framework" in n for n in names), names
    # So is the MXNet engine library (csrc/mxnet, docs/mxnet.md): no MXNet at build time.
    mx_ops = "horovod_accel/mxnet/libhvda_mxnet.so"
    assert mx_ops in names, f"the MXNet engine library is missing: {names}"
    # And the JAX FFI library (csrc/jax, docs/design/jax.md): XLA's FFI headers
    # at build time (the build venv has jaxlib), nothing of jaxlib at run time.
    jax_ffi = "horovod_accel/jax/libhvda_jax.so"
    assert jax_ffi in names, f"the JAX FFI library is missing: {names}"
    allowed = shims | {tf_ops, mx_ops, jax_ffi}
    assert not any(n.endswith(".so") and "_core" not in n and n not in allowed for n in names), \
        f"the core wheel must hold no device plugin: {names}"
    requires = re.findall(r"^Requires-Dist: (.*)$", meta, re.M)
    hard = [q for q in requires if "extra ==" not in q]
    # Upstream Horovod's own requirements (its scripts import psutil and
    # yaml and rely on Horovod to bring them).
    assert {q.split()[0].lower() for q in hard} == {"cloudpickle", "psutil", "pyyaml", "packaging"}, requires
    extras = set(re.findall(r"^Provides-Extra: (.*)$", meta, re.M))
    assert {"torch", "tensorflow", "tensorflow-cpu", "keras", "mxnet", "spark", "ray"} <= extras, extras
    assert any(q.startswith("torch") and 'extra == "torch"' in q for q in requires), requires
    assert re.search(r"^License-Expression: Apache-2.0$", meta, re.M), meta[:2000]
    assert any(n.endswith(".dist-info/licenses/THIRD_PARTY_NOTICES.md") for n in names), names
    assert "Classifier: Operating System :: POSIX :: Linux" in meta, meta[:2000]
    assert not any(q.split()[0].lower().startswith(("torch", "tensorflow", "mxnet")) for q in hard), requires
    assert "horovodrun = horovod_accel.runner.launch:run_commandline" in eps, eps
    # A vendor builds a plugin against the installed wheel (get_include()).
    assert "horovod_accel/include/horovod_accel/plugin.h" in names, names


@pytest.mark.parametrize("device", PLUGINS)
def test_plugin_wheel_holds_its_library_and_entry_point(wheels, device):
    whl = wheels[f"horovod_accel_{device}"]
    assert re.search(r"-py3-none-manylinux_2_\d+_x86_64\.whl$", whl.name), whl.name
    with zipfile.ZipFile(whl) as z:
        names = z.namelist()
        eps = z.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert f"horovod_accel_{device}/libhorovod_accel_{device}.so" in names, names
    assert "[horovod_accel.plugins]" in eps and \
        f"{device} = horovod_accel_{device}:library_path" in eps, eps
    for license_file in ("LICENSE", "THIRD_PARTY_NOTICES.md"):
        assert any(n.endswith(f".dist-info/licenses/{license_file}") for n in names), names


def test_installed_core_does_not_depend_on_the_build_tree(venv):
    site = next((venv / "lib").glob("python3*/site-packages"))
    core = next((site / "horovod_accel").glob("_core*.so"))
    readelf = shutil.which("readelf")
    if readelf:
        r = run([readelf, "-d", core], 60)
        assert str(REPO) not in r.stdout, f"{core} has a run path into the checkout:\n{r.stdout}"
    ldd = shutil.which("ldd")
    if ldd:
        r = run([ldd, core], 60)
        assert "not found" not in r.stdout and str(REPO) not in r.stdout, r.stdout


def test_fresh_venv_runs_a_2_process_job(venv, tmp_path):
    job = tmp_path / "wheel_job.py"
    job.write_text(JOB)
    r = run([venv / "bin" / "horovodrun", "-np", "2", venv / "bin" / "python", job, REPO],
            JOB_TIMEOUT, cwd=str(tmp_path), env=clean_env(venv))
    assert r.returncode == 0, "the 2-process job failed" + tail(r)
    ok = dict(re.findall(r"WHEEL-JOB-OK rank=(\d+) size=2 sum=3 core=(\S+)", r.stdout))
    assert set(ok) == {"0", "1"}, "both ranks must report success" + tail(r)
    for core in ok.values():
        assert core.startswith(str(venv)), f"_core loaded from {core}, not the fresh venv" + tail(r)


def test_check_build_lists_both_plugins(venv, tmp_path):
    r = run([venv / "bin" / "horovodrun", "--check-build"], JOB_TIMEOUT, cwd=str(tmp_path),
            env=clean_env(venv))
    assert r.returncode == 0, "horovodrun --check-build failed" + tail(r)
    out = r.stdout
    assert "[X] Gloo" in out and "[X] cpu" in out, out
    assert "(none found)" not in out and "entry point '" not in out, out
    site = next((venv / "lib").glob("python3*/site-packages"))
    for device in PLUGINS:
        lib = site / f"horovod_accel_{device}" / f"libhorovod_accel_{device}.so"
        # Loaded and probed: "[ ] gcu 0.1.0 (device 'gcu', ABI 1.0, <lib>)"; unavailable
        # here (no vendor runtime) is expected, the reason follows on the next line.
        pattern = rf"\[[ X]\] {device} \S+ \(device '{device}', ABI [0-9.]+, {re.escape(str(lib))}\)"
        assert re.search(pattern, out), f"plugin {device} ({lib}) is not listed as loaded:\n{out}"


@pytest.fixture(scope="module")
def unpacked_wheels(wheels, tmp_path_factory):
    """The core and plugin wheels unpacked into one folder, to put first on
    PYTHONPATH of the checkout's own interpreter (which has torch)."""
    root = tmp_path_factory.mktemp("unpacked")
    for whl in wheels.values():
        with zipfile.ZipFile(whl) as z:
            z.extractall(root)
    for so in root.rglob("*.so"):
        so.chmod(0o755)
    return root


@pytest.mark.parametrize("device", PLUGINS)
def test_plugin_wheel_passes_conformance_over_the_emulated_stack(unpacked_wheels, tmp_path, device):
    # The release core and plugin (zig-built, libc++ inside) run the device
    # conformance suite at np 2 in plugin memory on the emulated vendor
    # libraries, and every process exits cleanly: a plugin whose static
    # destructors outlive its dlclose crashes every process at exit
    # (csrc/devices/dso_finalize.cc). The suite needs torch, so this runs the
    # checkout's interpreter with the unpacked wheels first on its path.
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOROVOD_")}
    env.update(emulated_build.plugin_env(device))
    env["PYTHONPATH"] = str(unpacked_wheels)
    env["OMP_NUM_THREADS"] = "1"
    r = run([sys.executable, "-m", "horovod_accel.runner.launch", "-np", "2", sys.executable,
             "-c", "import horovod_accel._core as c, runpy, sys; print('CORE', c.__file__, flush=True); "
                   "sys.argv[0] = 'conformance'; runpy.run_module('horovod_accel.conformance', "
                   "run_name='__main__')",
             "--device", device, "--memory", "plugin", "--quick"], 600, cwd=str(tmp_path), env=env)
    assert r.returncode == 0, f"conformance on the {device} plugin wheel failed" + tail(r)
    m = re.findall(r"conformance: (\d+) passed, (\d+) failed", r.stdout)
    assert m and int(m[-1][0]) > 100 and m[-1][1] == "0", tail(r)
    cores = re.findall(r"CORE (\S+)", r.stdout)
    assert len(cores) == 2 and all(c.startswith(str(unpacked_wheels)) for c in cores), tail(r)
    # init() loads the plugin, shutdown() dlcloses it, and the process must
    # still exit cleanly (the zig-built plugin before dso_finalize.cc: SIGSEGV).
    r = run([sys.executable, "-m", "horovod_accel.runner.launch", "-np", "2", sys.executable, "-c",
             "from horovod_accel.common.basics import HorovodBasics as B; h = B(); h.init(); "
             "h.shutdown(); print('SHUTDOWN-OK', flush=True)"], 120, cwd=str(tmp_path), env=env)
    assert r.returncode == 0 and r.stdout.count("SHUTDOWN-OK") == 2, tail(r)
    # The plugin that served the device is the wheel's, and usable.
    plugin = unpacked_wheels / f"horovod_accel_{device}" / f"libhorovod_accel_{device}.so"
    r = run([sys.executable, "-m", "horovod_accel.runner.launch", "--check-build"], 120,
            cwd=str(tmp_path), env=env)
    assert r.returncode == 0 and re.search(rf"\[X\] {device} \S+ \(device '{device}', ABI [0-9.]+, "
                                           rf"{re.escape(str(plugin))}\)", r.stdout), tail(r)


def test_dockerfiles_pass_hadolint():
    dockerfiles = sorted((REPO / "docker").glob("Dockerfile.*"))
    assert {p.name for p in dockerfiles} >= {"Dockerfile.cpu", "Dockerfile.cuda", "Dockerfile.gcu"}
    r = run(["bash", REPO / "scripts" / "lint_docker.sh"], INSTALL_TIMEOUT, cwd=str(REPO))
    assert r.returncode == 0, "hadolint found problems" + tail(r)
    for p in dockerfiles:
        assert p.name in r.stdout, f"{p.name} was not linted" + tail(r)


@pytest.mark.skipif(os.environ.get("HVDA_TEST_ISOLATED_INSTALL") != "1",
                    reason="order (a) compiles the core once more (~4 min on 2 cores): set "
                           "HVDA_TEST_ISOLATED_INSTALL=1 to run it")
def test_isolated_pip_install_then_tensorflow(sdist, tmp_path_factory, tmp_path):
    # Order (a): a plain `pip install horovod_accel-<v>.tar.gz` (the sdist;
    # default build isolation: setuptools, pybind11 and cmake come from the
    # index, tensorflow is nowhere in the build environment; Gloo is the
    # system's, libgloo-dev), then tensorflow.
    root = tmp_path_factory.mktemp("isolated")
    venv, pip, env = make_venv(root)
    build_env = {**env, "HVDA_SETUPTOOLS_BUILD_BASE": str(root / "setuptools"),
                 "HVDA_BUILD_DIR": str(root / "cmake")}
    r = run(pip + ["install", "-q", sdist], BUILD_TIMEOUT, cwd=str(root), env=build_env)
    assert r.returncode == 0, f"pip install {sdist.name} (isolated) failed" + tail(r)
    print(f"\nisolated pip install {sdist.name} took {r.elapsed:.0f} s")
    site = next((venv / "lib").glob("python3*/site-packages"))
    assert (site / "horovod_accel" / "tensorflow" / "libhvda_tf_ops.so").exists()
    install_tensorflow_later(venv, pip, env, root)
    check_tensorflow_works(venv, tmp_path)
