"""Building the emulated vendor stack (tests/emulated/README.md) for the tests
that need it.

`build()` configures (first time) and builds build/emulated, at most once
per Python process, under an exclusive lock on build/emulated.lock - the
lock scripts/emulated_env.sh takes too - so parallel test processes and
scripts never build it at the same time. It returns the library folder.
`library(name)`, `program(name)` and `plugin_env(device)` name what the build
made.
"""
import fcntl
import functools
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCE_DIR = REPO / "tests" / "emulated"
BUILD_DIR = REPO / "build" / "emulated"
LIB_DIR = BUILD_DIR / "lib"
BIN_DIR = BUILD_DIR / "bin"
LOCK_FILE = REPO / "build" / "emulated.lock"
BUILD_TIMEOUT = 900  # seconds; a first build takes about a minute on two cores

# The vendor libraries each device's plugin loads, by the variable naming them.
PLUGIN_LIBRARIES = {
    "gcu": {"HOROVOD_GCU_RUNTIME_LIB": "libtopsrt_emu.so", "HOROVOD_ECCL_LIB": "libeccl_emu.so"},
    "cuda": {"HOROVOD_CUDA_RUNTIME_LIB": "libcudart_emu.so", "HOROVOD_NCCL_LIB": "libnccl_emu.so"},
}


def _cmake():
    found = shutil.which("cmake")
    if found:
        return found
    venv = REPO / ".venv" / "bin" / "cmake"
    if venv.exists():
        return str(venv)
    raise RuntimeError("cmake not found: install it (scripts/setup.sh does) to build tests/emulated")


def _run(cmd):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                       timeout=BUILD_TIMEOUT, cwd=str(REPO))
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed (exit {r.returncode}):\n"
                           f"{r.stdout[-6000:]}\n{r.stderr[-6000:]}")


@functools.lru_cache(maxsize=None)
def build():
    """Builds the emulated libraries and test programs (incrementally) and
    returns the library folder. Raises RuntimeError with the build output if
    the build fails."""
    cmake = _cmake()
    LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK_FILE, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (BUILD_DIR / "CMakeCache.txt").exists():
            _run([cmake, "-S", SOURCE_DIR, "-B", BUILD_DIR])
        _run([cmake, "--build", BUILD_DIR, "-j2"])
    return LIB_DIR


def library(name):
    """The path of a built library, e.g. library("libeccl_emu.so")."""
    return build() / name


def program(name):
    """The path of a built test program (emu_selftest, emu_ccl_check)."""
    build()
    return BIN_DIR / name


def plugin_env(device):
    """The HOROVOD_* variables that point device's plugin ("gcu" or "cuda")
    at the emulated libraries."""
    lib = build()
    return {var: str(lib / name) for var, name in PLUGIN_LIBRARIES[device].items()}


if __name__ == "__main__":
    print(build())
