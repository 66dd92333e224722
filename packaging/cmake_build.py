"""CMake helpers shared by the core's setup.py and every plugin wheel's build
(packaging/plugin_wheel.py). Imported from packaging/ in a checkout; sdists
carry a copy (MANIFEST.in for the core, SdistWithSources for plugins)."""
import os
import shutil
import subprocess
import sys


def cmake_executable(who="horovod_accel"):
    """cmake from PATH, else the one pip installed beside this Python (.venv/bin)."""
    found = shutil.which("cmake") or shutil.which("cmake", path=os.path.dirname(sys.executable))
    if not found:
        raise SystemExit(f"{who}: cannot build from source: cmake (>= 3.18) is needed "
                         "(pip install cmake, or apt-get install cmake)")
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


# What a failed configure means, for the person running pip: CMake's own
# words, mapped to the package to install. First match wins.
_NO_COMPILER = "a C++17 compiler is needed (Debian/Ubuntu: apt-get install g++; RHEL/Fedora: dnf install gcc-c++)"
_CONFIGURE_FAILURES = (
    ("No CMAKE_CXX_COMPILER could be found", _NO_COMPILER),
    ("CMAKE_CXX_COMPILER not set", _NO_COMPILER),
    ("Could NOT find Python3",
     "Python's C headers are needed (Debian/Ubuntu: apt-get install python3-dev; RHEL/Fedora: dnf install "
     "python3-devel)"),
)


def _missing_line(output):
    """The text of a `HVDA_MISSING:` message (CMakeLists.txt), unwrapped."""
    start = output.find("HVDA_MISSING:")
    if start < 0:
        return None
    text = output[start + len("HVDA_MISSING:"):].split("\n\n", 1)[0]
    return " ".join(text.split())


def configure_and_build(cmake, src, build_dir, args, targets, jobs, who):
    """Configures src in build_dir and builds targets. A failure ends the
    build with one message naming what is missing (never CMake's trace on the
    terminal); CMake's full output stays in build_dir/hvda-cmake-*.log."""
    os.makedirs(build_dir, exist_ok=True)
    steps = (("configure", [cmake, "-S", src, "-B", build_dir] + list(args)),
             ("build", [cmake, "--build", build_dir, "--target", *targets, "-j", str(jobs)]))
    for step, cmd in steps:
        log = os.path.join(build_dir, f"hvda-cmake-{step}.log")
        with open(log, "w", encoding="utf-8") as f:
            rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT)
        if rc == 0:
            continue
        with open(log, encoding="utf-8", errors="replace") as f:
            output = f.read()
        reason = _missing_line(output)
        if reason is None:
            reason = next((why for needle, why in _CONFIGURE_FAILURES if needle in output), None)
        if reason is not None:
            raise SystemExit(f"{who}: cannot build from source: {reason}\n"
                             f"(CMake's output: {log}; pip removes it unless given --no-clean)")
        last = "\n".join(output.rstrip().splitlines()[-25:])
        raise SystemExit(f"{who}: the CMake {step} step failed; its last lines:\n{last}\n"
                         f"(all of CMake's output: {log}; pip removes it unless given --no-clean)")
