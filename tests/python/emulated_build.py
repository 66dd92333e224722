"""Building the emulated vendor stack (tests/emulated/README.md) for the tests
that need it.

`build()` configures (first time) and builds build/emulated, at most once
per Python process, under an exclusive lock on build/emulated.lock - the
lock scripts/emulated_env.sh takes too - so parallel test processes and
scripts never build it at the same time. It returns the library folder.
`library(name)`, `program(name)` and `plugin_env(device)` name what the build
made; `tf_device_library()` the emulated TF PluggableDevice "GCU", which is
built only when this Python has tensorflow (its C headers and
libtensorflow_framework.so.2; found without importing tensorflow).
"""
import fcntl
import functools
import importlib.util
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

TF_DEVICE_LIBRARY = "libhvda_emu_tf_gcu.so"
TF_HEADER = Path("include", "tensorflow", "c", "kernels.h")
TF_FRAMEWORK = "libtensorflow_framework.so.2"

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


def _tensorflow_dir():
    """(folder, None) of this Python's installed tensorflow package when it
    has what the TF plugin builds against, else (None, why not). Does not
    import tensorflow (find_spec of a top-level package imports nothing)."""
    spec = importlib.util.find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        return None, "tensorflow is not installed for this Python"
    folder = Path(list(spec.submodule_search_locations)[0])
    for need in (TF_HEADER, Path(TF_FRAMEWORK)):
        if not (folder / need).exists():
            return None, f"the tensorflow at {folder} has no {need}"
    return folder, None


def _cached_tf_dir():
    """HVDA_EMU_TF_DIR as the existing build's CMake cache holds it ("" when
    unset or when there is no cache)."""
    cache = BUILD_DIR / "CMakeCache.txt"
    if not cache.exists():
        return None
    for line in cache.read_text().splitlines():
        if line.startswith("HVDA_EMU_TF_DIR:"):
            return line.split("=", 1)[1]
    return ""


@functools.lru_cache(maxsize=None)
def build():
    """Builds the emulated libraries and test programs (incrementally) and
    returns the library folder. Raises RuntimeError with the build output if
    the build fails. Configures (again) when there is no build yet or when
    HVDA_EMU_TF_DIR - this Python's tensorflow, or none - changed."""
    cmake = _cmake()
    tf_dir, _ = _tensorflow_dir()
    want = str(tf_dir) if tf_dir else ""
    LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK_FILE, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if _cached_tf_dir() != want:
            _run([cmake, "-S", SOURCE_DIR, "-B", BUILD_DIR, f"-DHVDA_EMU_TF_DIR={want}"])
        _run([cmake, "--build", BUILD_DIR, "-j2"])
    return LIB_DIR


def library(name):
    """The path of a built library, e.g. library("libeccl_emu.so")."""
    return build() / name


def program(name):
    """The path of a built test program (emu_selftest, emu_ccl_check)."""
    build()
    return BIN_DIR / name


def tf_device_library():
    """The path of libhvda_emu_tf_gcu.so, the emulated TF PluggableDevice
    "GCU" (tests/emulated/README.md), after build(). Raises RuntimeError
    naming why when it was not built."""
    lib = build() / TF_DEVICE_LIBRARY
    tf_dir, why = _tensorflow_dir()
    if tf_dir is None:
        raise RuntimeError(f"{TF_DEVICE_LIBRARY} was not built: {why}")
    if not lib.exists():
        raise RuntimeError(f"{TF_DEVICE_LIBRARY} was not built although {tf_dir} has "
                           f"tensorflow's C headers: see CMake's output in {BUILD_DIR}")
    return lib


def plugin_env(device):
    """The HOROVOD_* variables that point device's plugin ("gcu" or "cuda")
    at the emulated libraries."""
    lib = build()
    return {var: str(lib / name) for var, name in PLUGIN_LIBRARIES[device].items()}


if __name__ == "__main__":
    print(build())
