"""The wheels on a machine that never built them (docs/design/packaging.md):
a clean Debian 12 container made from Debian's packages alone
(scripts/stand_in_base.sh: python3, python3-venv, pip; no compiler, no Gloo,
no MPI, no -dev package) gets the core wheel and torch==2.13.0 in a venv and
trains a 2-rank torch job through its own `horovodrun`; then the plugin
wheels, which `horovodrun --check-build` lists with why they cannot work
there (no vendor library); then tensorflow-cpu, installed after the core,
and a 2-rank TF2 tape job; then jax, and a 2-rank jitted JAX job whose
gradient allreduce is the wheel's XLA custom call. So a wheel needing a library of the build machine
cannot land again. The sdist there (no compiler) fails with one line saying
what to install. On Debian 11 (glibc 2.31), the plugin and MXNet libraries
load and the plugins' entry points answer.

The container uses the host's network (its ranks talk over loopback), the
host's pip settings (index, local wheel folders, CA bundle: mounted
read-only by scripts/pip_passthrough.py) and pip cache. Needs podman and mmdebstrap
(scripts/setup.sh installs them); skipped without them unless
HVDA_REQUIRE_CONTAINERS=1 (.ci/run sets it). Marked `slow`.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import uuid
import zipfile

import pytest

from wheel_build import PLUGINS, REPO, run, tail

IMAGE = "localhost/hvda-stand-in/debian12-python"
IMAGE_PACKAGES = ("python3", "python3-venv", "python3-pip")
OLD_GLIBC_IMAGE = "localhost/hvda-stand-in/debian11-python"   # glibc 2.31
CONTAINERS_CONF = REPO / "docker" / "podman" / "containers.conf"
JOBS = REPO / "tests" / "python" / "wheel_scripts"
VENV = "/opt/venv"
BASE_TIMEOUT = 600
INSTALL_TIMEOUT = 900
JOB_TIMEOUT = 300

_missing = [t for t in ("podman", "mmdebstrap") if shutil.which(t) is None]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(_missing) and os.environ.get("HVDA_REQUIRE_CONTAINERS") != "1",
                       reason=f"needs {' and '.join(_missing)} (apt-get install podman runc mmdebstrap)"),
]


def podman_env():
    return {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}


@pytest.fixture(scope="module")
def container(wheels, sdist, tmp_path_factory):
    """A running clean Debian 12 container with the wheels at /wheels, the
    sdist at /sdist and the jobs at /jobs; yields exec(cmd, timeout) ->
    CompletedProcess."""
    r = run(["bash", REPO / "scripts" / "stand_in_base.sh", IMAGE, *IMAGE_PACKAGES], BASE_TIMEOUT,
            env=podman_env())
    assert r.returncode == 0, "scripts/stand_in_base.sh failed" + tail(r)
    pip_mounts = subprocess.run([sys.executable, REPO / "scripts" / "pip_passthrough.py",
                                 tmp_path_factory.mktemp("pip")], capture_output=True, text=True,
                                timeout=120, check=True).stdout.split()
    cache = subprocess.run([sys.executable, "-m", "pip", "cache", "dir"], capture_output=True,
                           text=True, timeout=60).stdout.strip()
    name = f"hvda-wheel-test-{uuid.uuid4().hex[:8]}"
    cmd = ["podman", "run", "-d", "--rm", "--name", name, "--network", "host", "--shm-size", "1g",
           "-v", f"{wheels['horovod_accel'].parent}:/wheels:ro", "-v", f"{sdist.parent}:/sdist:ro",
           "-v", f"{JOBS}:/jobs:ro"]
    cmd += pip_mounts   # the host's pip settings at /etc/pip.conf, and what they name
    if cache and os.path.isdir(cache):
        cmd += ["-v", f"{cache}:/root/.cache/pip"]
    for k, v in {"OMP_NUM_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "3",
                 "PIP_DISABLE_PIP_VERSION_CHECK": "1"}.items():
        cmd += ["-e", f"{k}={v}"]
    r = run(cmd + [IMAGE, "sleep", "3600"], 120, env=podman_env())
    assert r.returncode == 0, "podman run failed" + tail(r)

    def exec_(script, timeout):
        return run(["podman", "exec", name, "bash", "-ec", script], timeout, env=podman_env())

    try:
        yield exec_
    finally:
        subprocess.run(["podman", "rm", "-f", "-t", "0", name], env=podman_env(), capture_output=True,
                       timeout=120)


def test_the_container_has_nothing_of_the_build_machine(container):
    r = container("for t in gcc g++ cc c++ cmake mpirun; do command -v $t && echo HAS=$t; done; "
                  "ls /usr/lib/x86_64-linux-gnu | grep -E '^lib(gloo|mpi|hiredis|ibverbs)' || true; "
                  "dpkg -l | awk '/^ii/ && $2 ~ /-dev(:|$)/ {print \"DEV=\" $2}'", 60)
    assert r.returncode == 0, tail(r)
    assert "HAS=" not in r.stdout and "DEV=" not in r.stdout and "lib" not in r.stdout, r.stdout


def test_core_wheel_and_torch_train_2_ranks(container, wheels):
    core = f"/wheels/{wheels['horovod_accel'].name}"
    r = container(f"python3 -m venv {VENV} && {VENV}/bin/pip install -q torch==2.13.0", INSTALL_TIMEOUT)
    assert r.returncode == 0, "installing torch==2.13.0 in the container failed" + tail(r)
    # The core wheel into a venv that already has torch (its dependencies
    # from the index): the install time users feel.
    r = container(f"{VENV}/bin/pip install -q {shlex.quote(core)}", INSTALL_TIMEOUT)
    assert r.returncode == 0, "installing the core wheel in the container failed" + tail(r)
    print(f"\ncore wheel installed into a venv with torch in {r.elapsed:.1f} s")
    r = container(f"cd /tmp && {VENV}/bin/horovodrun -np 2 {VENV}/bin/python /jobs/torch_train.py",
                  JOB_TIMEOUT)
    assert r.returncode == 0, "the 2-rank torch job failed in the clean container" + tail(r)
    ok = dict(re.findall(r"TORCH-WHEEL-JOB-OK rank=(\d+) size=2 .* core=(\S+)", r.stdout))
    assert set(ok) == {"0", "1"}, "both ranks must report success" + tail(r)
    assert all(c.startswith(VENV) for c in ok.values()), ok
    r = container(f"{VENV}/bin/horovodrun --version", 60)
    assert r.returncode == 0 and re.search(r"^\d+\.\d+\.\d+ \(wheel cp3\d+-cp3\d+-manylinux_2_\d+_x86_64, "
                                           r"core built by ", r.stdout), tail(r)


def test_plugin_wheels_listed_with_why_they_cannot_work(container, wheels):
    plugins = " ".join(f"/wheels/{wheels[f'horovod_accel_{p}'].name}" for p in PLUGINS)
    r = container(f"{VENV}/bin/pip install -q --no-deps {plugins} && {VENV}/bin/horovodrun --check-build",
                  INSTALL_TIMEOUT)
    assert r.returncode == 0, "--check-build with the plugin wheels failed" + tail(r)
    out = r.stdout
    assert "[X] PyTorch" in out and "[X] Gloo" in out, out
    for device, lib_var in (("gcu", "HOROVOD_ECCL_LIB"), ("cuda", "HOROVOD_NCCL_LIB")):
        lib = f"{VENV}/lib/python3.11/site-packages/horovod_accel_{device}/libhorovod_accel_{device}.so"
        m = re.search(rf"\[ \] {device} \S+ \(device '{device}', ABI [0-9.]+, {re.escape(lib)}\)\n(.*)", out)
        assert m, f"plugin {device} is not listed as loaded and unusable:\n{out}"
        assert m.group(1).strip(), f"no reason given why {device} cannot work:\n{out}"


def test_tensorflow_installed_after_the_core_wheel(container):
    # Order (b): the core wheel first, then tensorflow-cpu; the op library in
    # the wheel (built without TensorFlow) serves the TensorFlow installed later.
    r = container(f"{VENV}/bin/pip install -q --no-compile tensorflow-cpu==2.21.0", INSTALL_TIMEOUT)
    assert r.returncode == 0, "installing tensorflow-cpu in the container failed" + tail(r)
    r = container(f"cd /tmp && {VENV}/bin/horovodrun -np 2 {VENV}/bin/python /jobs/tf_tape_train.py {VENV}",
                  JOB_TIMEOUT)
    assert r.returncode == 0, "the 2-rank TensorFlow job failed in the clean container" + tail(r)
    assert set(re.findall(r"TF-WHEEL-JOB-OK rank=(\d+) size=2", r.stdout)) == {"0", "1"}, tail(r)
    r = container(f"{VENV}/bin/horovodrun --check-build", 120)
    assert r.returncode == 0 and "[X] TensorFlow" in r.stdout, tail(r)


def test_jax_installed_after_the_core_wheel(container):
    # The JAX FFI library in the wheel (built against XLA's FFI headers only)
    # serves the jaxlib installed later; the collectives run inside jax.jit.
    r = container(f"{VENV}/bin/pip install -q --no-compile jax==0.10.2 jaxlib==0.10.2 optax==0.2.8",
                  INSTALL_TIMEOUT)
    assert r.returncode == 0, "installing jax in the container failed" + tail(r)
    r = container(f"cd /tmp && {VENV}/bin/horovodrun -np 2 {VENV}/bin/python /jobs/jax_train.py",
                  JOB_TIMEOUT)
    assert r.returncode == 0, "the 2-rank JAX job failed in the clean container" + tail(r)
    oks = re.findall(r"JAX-WHEEL-JOB-OK rank=(\d+) size=2 .* library=(\S+)", r.stdout)
    assert {rank for rank, _ in oks} == {"0", "1"}, tail(r)
    assert all(lib.startswith(f"{VENV}/lib/") for _, lib in oks), tail(r)
    r = container(f"{VENV}/bin/horovodrun --check-build", 120)
    assert r.returncode == 0 and "[X] JAX" in r.stdout, tail(r)


def test_sdist_without_a_compiler_says_so_in_one_line(container, sdist):
    # The documented build dependencies are missing here (no compiler, no
    # Gloo): pip's build must end with what to install, not CMake's trace.
    r = container(f"python3 -m venv /opt/sdist-venv && /opt/sdist-venv/bin/pip install /sdist/{sdist.name}",
                  INSTALL_TIMEOUT)
    out = r.stdout + r.stderr
    assert r.returncode != 0, "the sdist built without a compiler?" + tail(r)
    assert "horovod_accel: cannot build from source: a C++17 compiler is needed" in out, tail(r)
    assert "CMake Error" not in out and "Traceback" not in out, tail(r)


def test_binaries_load_on_an_older_glibc(wheels, tmp_path):
    # The manylinux tag says glibc 2.24 is enough. Debian 11 (glibc 2.31) is
    # the oldest release reachable here; its Python 3.9 cannot import the
    # cp311 core, so the Python-independent binaries are loaded with ctypes.
    r = run(["bash", REPO / "scripts" / "stand_in_base.sh", OLD_GLIBC_IMAGE, "python3"], BASE_TIMEOUT,
            env={**podman_env(), "HVDA_DEBIAN_SUITE": "bullseye"})
    assert r.returncode == 0, "scripts/stand_in_base.sh (bullseye) failed" + tail(r)
    unpacked = tmp_path / "unpacked"
    for whl in wheels.values():
        with zipfile.ZipFile(whl) as z:
            z.extractall(unpacked)
    r = run(["podman", "run", "--rm", "-v", f"{unpacked}:/w:ro", "-v", f"{JOBS}:/jobs:ro", OLD_GLIBC_IMAGE,
             "python3", "/jobs/load_on_old_glibc.py", "/w"], 120, env=podman_env())
    assert r.returncode == 0, "loading the wheels' binaries on Debian 11 failed" + tail(r)
    assert "glibc 2.31" in r.stdout, tail(r)
    loaded = set(re.findall(r"OLD-GLIBC-LOADED (\S+)", r.stdout))
    assert loaded == {f"libhorovod_accel_{p}.so" for p in PLUGINS} | {"libhvda_mxnet.so"}, tail(r)
