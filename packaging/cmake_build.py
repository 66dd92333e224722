"""CMake helpers shared by the core's setup.py and every plugin wheel's build
(packaging/plugin_wheel.py). Imported from packaging/ in a checkout; sdists
carry a copy (MANIFEST.in for the core, SdistWithSources for plugins)."""
import os
import shutil
import sys


def cmake_executable(who="horovod_accel"):
    """cmake from PATH, else the one pip installed beside this Python (.venv/bin)."""
    found = shutil.which("cmake") or shutil.which("cmake", path=os.path.dirname(sys.executable))
    if not found:
        raise RuntimeError(f"{who}: cmake (>= 3.18) is needed to build it: install it "
                           "(apt-get install cmake, or pip install cmake)")
    return found


def reset_if_other_source(build_dir, src):
    """Empties a reused build folder that CMake configured for other sources
    (another checkout, or an unpacked sdist): CMake refuses to reuse it."""
    cache = os.path.join(build_dir, "CMakeCache.txt")
    if not os.path.isfile(cache):
        return
    with open(cache, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("CMAKE_HOME_DIRECTORY:"):
                home = line.split("=", 1)[1].strip()
                if os.path.realpath(home) != os.path.realpath(src):
                    shutil.rmtree(build_dir)
                return
