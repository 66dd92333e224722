"""The test-only torch device 'gcu' (tests/emulated/torch_gcu/) over the emulated
TOPS runtime: it autoloads at `import torch` through the `torch.backends` entry
point, its tensors live in emulated device memory (the host cannot read it),
and ordinary training runs on it with the same results as on the CPU. Its
cuda flavour ('emucuda' over the emulated CUDA runtime, HVDA_TEST_DEVICE_RUNTIME=cuda)
is checked under scripts/emulated_cuda.sh.

Everything runs in child processes, each under a hard timeout. The first run
on a machine compiles the extension (about a minute on two cores); later runs
reuse build/emulated/torch_gcu_ext/.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import emulated_build

REPO = Path(__file__).resolve().parents[2]
GCU_DIR = REPO / "tests" / "emulated" / "torch_gcu"
SITE = GCU_DIR / "site"
ENV_SH = GCU_DIR / "env.sh"
SELFTEST = GCU_DIR / "selftest.py"
EMU_BUILD = emulated_build.BUILD_DIR
RUNTIME_LIB = emulated_build.LIB_DIR / "libtopsrt_emu.so"

TIMEOUT = 180  # a job after the extension is built
BUILD_TIMEOUT = 1500  # a job that compiles the extension first


def _run(cmd, env, timeout, cwd=REPO):
    t0 = time.monotonic()
    try:
        r = subprocess.run([str(c) for c in cmd], env=env, cwd=str(cwd), capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        pytest.fail(f"{cmd} did not finish within {timeout} s\n--- stdout\n{out[-6000:]}\n"
                    f"--- stderr\n{err[-6000:]}")
    r.elapsed = time.monotonic() - t0
    return r


def _describe(r):
    return f"exit {r.returncode}\n--- stdout\n{r.stdout[-8000:]}\n--- stderr\n{r.stderr[-8000:]}"


def _build_emulated_runtime():
    """build/emulated (libtopsrt_emu.so), through the shared helper."""
    lib = emulated_build.library("libtopsrt_emu.so")
    assert lib == RUNTIME_LIB and lib.is_file(), lib


def gcu_env(**extra):
    """The environment scripts/emulated_gcu.sh gives: the runtime library and
    tests/emulated/torch_gcu/site on PYTHONPATH (what env.sh adds)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HOROVOD_", "HVDA_EMU_", "HVDA_TEST_DEVICE_RUNTIME",
                                "TORCH_DEVICE_BACKEND"))}
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(SITE), str(REPO), os.environ.get("PYTHONPATH")]))
    env["HOROVOD_GCU_RUNTIME_LIB"] = str(RUNTIME_LIB)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def py(code, env, timeout=TIMEOUT):
    return _run([sys.executable, "-c", code], env, timeout)


@pytest.fixture(scope="module", autouse=True)
def built():
    """The emulated runtime and (on first use on this machine) the extension."""
    _build_emulated_runtime()
    r = py("import torch; assert torch.gcu.is_available(), 'no gcu'; print('READY')",
           gcu_env(), timeout=BUILD_TIMEOUT)
    assert r.returncode == 0 and "READY" in r.stdout, _describe(r)


def test_unchanged_script_uses_gcu_after_sourcing_env_sh():
    # What a user does: source env.sh (scripts/emulated_gcu.sh does) and run a
    # script that knows nothing about the extension.
    script = ("import torch\n"
              "x = torch.ones(4, device='gcu')\n"
              "print('DEVICE', x.device, (x * 2 + 1).cpu().tolist(), torch.gcu.device_count())\n")
    env = {k: v for k, v in gcu_env().items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(REPO)
    r = _run(["bash", "-c", f'. "{ENV_SH}" && exec "{sys.executable}" -c "$0"', script], env,
             TIMEOUT)
    assert r.returncode == 0, _describe(r)
    assert "DEVICE gcu:0 [3.0, 3.0, 3.0, 3.0]" in r.stdout, _describe(r)


def test_scripts_emulated_gcu_sh_gives_the_device():
    # scripts/emulated_gcu.sh exports the runtime and sources env.sh.
    script = REPO / "scripts" / "emulated_gcu.sh"
    if not script.is_file():
        pytest.skip("no scripts/emulated_gcu.sh")
    env = {k: v for k, v in gcu_env().items() if k not in ("PYTHONPATH", "HOROVOD_GCU_RUNTIME_LIB")}
    code = "import torch; print('SUM', torch.arange(4.0, device='gcu:1').sum().item())"
    r = _run(["bash", script, sys.executable, "-c", code], env, TIMEOUT)
    assert r.returncode == 0 and "SUM 6.0" in r.stdout, _describe(r)


def test_emucuda_flavour_under_emulated_cuda_sh():
    # scripts/emulated_cuda.sh: the same extension as 'emucuda' over the
    # emulated CUDA runtime, served by the CUDA plugin (HOROVOD_CUDA_DEVICE_TYPE).
    script = REPO / "scripts" / "emulated_cuda.sh"
    env = {k: v for k, v in gcu_env().items() if k not in ("PYTHONPATH", "HOROVOD_GCU_RUNTIME_LIB")}
    code = ("import torch, horovod_accel.torch as hvd\n"
            "hvd.init()\n"
            "y = hvd.allreduce(torch.ones(4, device='emucuda'), op=hvd.Sum)\n"
            "print('ALLREDUCE', y.device.type, y.cpu().tolist(), flush=True)\n")
    r = _run(["bash", script, sys.executable, "-m", "horovod_accel.runner.launch", "-np", "2",
              sys.executable, "-c", code], env, TIMEOUT)
    assert r.returncode == 0, _describe(r)
    for rank in range(2):
        assert f"[{rank}]<stdout>:ALLREDUCE emucuda [2.0, 2.0, 2.0, 2.0]" in r.stdout, _describe(r)
    # its memory is emulated device memory: the host reading it gets SIGSEGV
    code = ("import ctypes, torch\n"
            "x = torch.ones(4, device='emucuda')\n"
            "print('BEFORE', flush=True)\n"
            "ctypes.string_at(x.data_ptr(), 4)\n"
            "print('AFTER', flush=True)\n")
    r = _run(["bash", script, sys.executable, "-c", code], env, TIMEOUT)
    assert "BEFORE" in r.stdout and "AFTER" not in r.stdout, _describe(r)
    assert r.returncode == -signal.SIGSEGV, _describe(r)
    # and the device checks pass on it (cuda* events, cudaHostAlloc pinned memory)
    r = _run(["bash", script, sys.executable, SELFTEST], env, TIMEOUT)
    assert r.returncode == 0 and "ALL OK" in r.stdout, _describe(r)


def test_selftest():
    # basics, dtypes, non-contiguous copies, views, resize_/set_, fallback ops,
    # autograd, nn.Linear training vs CPU (SGD/Adam, foreach and loop), module
    # methods and torch.save, gcu:1, events and pinned memory.
    r = _run([sys.executable, SELFTEST], gcu_env(), TIMEOUT)
    failed = [l for l in r.stdout.splitlines() if l.startswith("FAIL")]
    assert r.returncode == 0 and "ALL OK" in r.stdout, f"failed: {failed}\n{_describe(r)}"
    assert "OK training_matches_cpu" in r.stdout and "OK multi_device" in r.stdout
    assert "skipped" not in r.stdout  # the emulation has 4 devices by default


def test_single_device_and_slow_streams():
    # One device, and every stream operation of the runtime delayed: the copies
    # (host-synchronous, after the default stream) still see finished work.
    r = _run([sys.executable, SELFTEST, "basics", "noncontiguous_copies", "multi_device",
              "training_matches_cpu", "events_and_pinned_memory"],
             gcu_env(HVDA_EMU_DEVICE_COUNT=1, HVDA_EMU_STREAM_DELAY_US=200), TIMEOUT)
    assert r.returncode == 0 and "ALL OK" in r.stdout, _describe(r)
    assert "(one device: skipped)" in r.stdout


def test_host_read_of_device_memory_crashes():
    # The tensor's data pointer is emulated device memory: the host reading it
    # gets SIGSEGV (a CPU tensor's pointer reads fine).
    code = ("import ctypes, torch\n"
            "c = torch.ones(4)\n"
            "assert ctypes.string_at(c.data_ptr(), 4) == c.numpy().tobytes()[:4]\n"
            "x = torch.ones(4, device='gcu')\n"
            "print('BEFORE', hex(x.data_ptr()), flush=True)\n"
            "ctypes.string_at(x.data_ptr(), 4)\n"
            "print('AFTER', flush=True)\n")
    r = py(code, gcu_env())
    assert "BEFORE" in r.stdout and "AFTER" not in r.stdout, _describe(r)
    assert r.returncode == -signal.SIGSEGV, _describe(r)


def test_autoload_disabled_means_no_gcu():
    # TORCH_DEVICE_BACKEND_AUTOLOAD=0: torch does not run the entry point, so
    # there is no 'gcu' until the package is installed by hand.
    code = ("import sys, torch\n"
            "assert 'hvda_test_gcu' not in sys.modules and not hasattr(torch, 'gcu')\n"
            "try:\n"
            "    torch.ones(4, device='gcu')\n"
            "except RuntimeError as e:\n"
            "    print('REFUSED', str(e).splitlines()[0])\n"
            "else:\n"
            "    raise SystemExit('gcu worked without the autoload')\n"
            "import hvda_test_gcu\n"
            "hvda_test_gcu.install()\n"
            "print('MANUAL', torch.ones(2, device='gcu').cpu().tolist())\n")
    r = py(code, gcu_env(TORCH_DEVICE_BACKEND_AUTOLOAD="0"))
    assert r.returncode == 0, _describe(r)
    assert "REFUSED" in r.stdout and "MANUAL [1.0, 1.0]" in r.stdout, _describe(r)


def test_runtime_lib_unset_keeps_torch_importable():
    # A job whose environment dropped HOROVOD_* still imports torch; 'gcu' then
    # has no devices and using it names the missing variable.
    code = ("import torch\n"
            "assert not torch.gcu.is_available() and torch.gcu.device_count() == 0\n"
            "assert not torch.accelerator.is_available() and not torch.ones(2).is_pinned()\n"
            "print('CPU', torch.ones(2).sum().item())\n"
            "torch.ones(4, device='gcu')\n")
    env = gcu_env()
    del env["HOROVOD_GCU_RUNTIME_LIB"]
    r = py(code, env)
    assert "CPU 2.0" in r.stdout, _describe(r)
    assert r.returncode == 1 and "HOROVOD_GCU_RUNTIME_LIB" in r.stderr, _describe(r)


def test_runtime_lib_missing_is_a_clear_error():
    r = py("import torch", gcu_env(HOROVOD_GCU_RUNTIME_LIB="/nonexistent/libtopsrt_emu.so"))
    assert r.returncode != 0, _describe(r)
    assert "/nonexistent/libtopsrt_emu.so does not exist" in r.stderr, _describe(r)
    assert "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in r.stderr, _describe(r)
    # a library that is not a TOPS runtime
    other = emulated_build.library("libcudart_emu.so")
    r = py("import torch", gcu_env(HOROVOD_GCU_RUNTIME_LIB=other))
    assert r.returncode != 0, _describe(r)
    assert "symbol topsGetDeviceCount not found in the TOPS runtime" in r.stderr, _describe(r)
    # the cuda flavour names its own symbols; an unknown flavour is refused
    r = py("import torch",
           gcu_env(HVDA_TEST_DEVICE_RUNTIME="cuda", HOROVOD_CUDA_RUNTIME_LIB=RUNTIME_LIB))
    assert r.returncode != 0, _describe(r)
    assert "emucuda: symbol cudaGetDeviceCount not found in the CUDA runtime" in r.stderr, \
        _describe(r)
    r = py("import torch", gcu_env(HVDA_TEST_DEVICE_RUNTIME="rocm"))
    assert r.returncode != 0 and "HVDA_TEST_DEVICE_RUNTIME='rocm'" in r.stderr, _describe(r)


def test_loading_reuses_the_build():
    # After the first build, loading only dlopen()s the cached extension.
    r = py("import torch; print(torch.gcu.device_count())", gcu_env(HVDA_TORCH_GCU_VERBOSE=1))
    assert r.returncode == 0, _describe(r)
    assert "compiling" not in r.stderr, _describe(r)


@pytest.mark.slow
def test_concurrent_first_loads_build_once():
    # Several ranks importing torch at once on a machine without the build: one
    # compiles (under the lock), the others wait and load its result.
    with tempfile.TemporaryDirectory(dir=EMU_BUILD) as root:
        env = gcu_env(HVDA_TORCH_GCU_EXT_DIR=root, HVDA_TORCH_GCU_VERBOSE=1)
        code = "import torch; print('SUM', torch.ones(3, device='gcu').sum().item())"
        procs = [subprocess.Popen([sys.executable, "-c", code], env=env, cwd=str(REPO),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(3)]
        outs = []
        try:
            for p in procs:
                outs.append(p.communicate(timeout=BUILD_TIMEOUT))
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        for p, (out, err) in zip(procs, outs):
            assert p.returncode == 0 and "SUM 3.0" in out, f"{out}\n{err[-6000:]}"
        compiles = sum(err.count("compiling the 'gcu' torch extension") for _, err in outs)
        assert compiles == 1, [err[-3000:] for _, err in outs]
