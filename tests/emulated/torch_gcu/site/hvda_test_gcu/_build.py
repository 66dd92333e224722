"""Compiles (once) and loads the native part of the test-only 'gcu' device.

The extension is built with torch.utils.cpp_extension.load against the
installed torch, in a child process (torch is half-imported while the
autoload runs), into <repo>/build/emulated/torch_gcu_ext/<key>/ where <key>
hashes the sources, the torch build and the Python ABI. Later loads find the
finished build by its key and only dlopen it. An flock() on the build root
serializes concurrent first builds (e.g. several ranks starting at once); a
builder that dies releases it with its process.

Environment:
  HVDA_TORCH_GCU_EXT_DIR   build root (default <repo>/build/emulated/torch_gcu_ext)
  HVDA_TORCH_GCU_VERBOSE   1: show the compiler output of a build
  MAX_JOBS                 parallel compile jobs (default 2)
"""
import fcntl
import hashlib
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

NAME = "hvda_torch_gcu_C"
HERE = Path(__file__).resolve().parent
CSRC = HERE.parents[1] / "csrc"
REPO = HERE.parents[4]
SOURCES = ["runtime.cpp", "kernels.cpp", "autocast.cpp"]
HEADERS = ["gcu.h"]
CFLAGS = ["-O2", "-fvisibility=hidden"]
LDFLAGS = ["-ldl"]
BUILD_TIMEOUT_S = 1200
_OK = "BUILD_OK"


def build_root() -> Path:
    env = os.environ.get("HVDA_TORCH_GCU_EXT_DIR")
    return Path(env) if env else REPO / "build" / "emulated" / "torch_gcu_ext"


def _key() -> str:
    import torch

    h = hashlib.sha256()
    for f in SOURCES + HEADERS:
        h.update(f.encode() + b"\0" + (CSRC / f).read_bytes() + b"\0")
    h.update(repr((torch.__version__, getattr(torch.version, "git_version", ""),
                   sysconfig.get_config_var("EXT_SUFFIX"), sys.version, CFLAGS,
                   LDFLAGS)).encode())
    return h.hexdigest()[:16]


def build_dir() -> Path:
    return build_root() / _key()


_CHILD = r"""
import os, sys
from pathlib import Path
from torch.utils.cpp_extension import load
bd = Path(sys.argv[1])
stale = bd / "lock"  # cpp_extension's own baton; a killed build leaves it behind
if stale.exists():
    stale.unlink()
load(name=sys.argv[2], sources=sys.argv[3].split(os.pathsep), build_directory=str(bd),
     extra_cflags=sys.argv[4].split(), extra_ldflags=sys.argv[5].split(), with_cuda=False,
     is_python_module=True, verbose=os.environ.get("HVDA_TORCH_GCU_VERBOSE") == "1")
"""


def _compile(bd: Path) -> None:
    bd.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"  # the child must not try to load us
    env.setdefault("MAX_JOBS", "2")
    cmd = [sys.executable, "-c", _CHILD, str(bd), NAME,
           os.pathsep.join(str(CSRC / s) for s in SOURCES), " ".join(CFLAGS), " ".join(LDFLAGS)]
    verbose = os.environ.get("HVDA_TORCH_GCU_VERBOSE") == "1"
    t0 = time.monotonic()
    if verbose:
        print(f"hvda_test_gcu: compiling the 'gcu' torch extension into {bd}", file=sys.stderr)
    try:
        r = subprocess.run(cmd, env=env, cwd=str(bd), timeout=BUILD_TIMEOUT_S,
                           stdout=None if verbose else subprocess.PIPE,
                           stderr=None if verbose else subprocess.STDOUT, text=True)
    except subprocess.TimeoutExpired as e:
        raise RuntimeError(f"hvda_test_gcu: compiling the 'gcu' extension took over "
                           f"{BUILD_TIMEOUT_S} s (build dir {bd})") from e
    if r.returncode != 0:
        out = (r.stdout or "")[-8000:]
        raise RuntimeError(f"hvda_test_gcu: compiling the 'gcu' extension failed (exit "
                           f"{r.returncode}, build dir {bd}):\n{out}")
    so = bd / f"{NAME}.so"
    if not so.is_file():
        raise RuntimeError(f"hvda_test_gcu: build finished without {so}")
    (bd / _OK).write_text(f"{time.monotonic() - t0:.1f}\n")
    if verbose:
        print(f"hvda_test_gcu: compiled in {time.monotonic() - t0:.1f} s", file=sys.stderr)


def ensure_built() -> Path:
    """The path of the built extension, compiling it first if needed."""
    bd = build_dir()
    so = bd / f"{NAME}.so"
    if (bd / _OK).is_file() and so.is_file():
        return so
    root = build_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".build.lock", "a+") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            if not ((bd / _OK).is_file() and so.is_file()):
                _compile(bd)
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    return so


def load_extension():
    """Imports the extension module (building it first if needed)."""
    mod = sys.modules.get(NAME)
    if mod is not None:
        return mod
    so = ensure_built()
    loader = importlib.machinery.ExtensionFileLoader(NAME, str(so))
    spec = importlib.util.spec_from_file_location(NAME, str(so), loader=loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    sys.modules[NAME] = mod
    return mod


if __name__ == "__main__":  # python -m hvda_test_gcu._build: build now, print the path
    print(ensure_built())
