"""Builds a plugin wheel horovod_accel_<device> (shared by every
packaging/horovod_accel_<device>/setup.py): the device plugin
(libhorovod_accel_<device>.so, csrc/devices/CMakeLists.txt target
horovod_accel_<device>) inside a tiny Python package that declares it to
horovod_accel through the entry-point group `horovod_accel.plugins`.

The plugin needs only a C++17 compiler and cmake: it is compiled against no
framework and no vendor SDK (it loads the vendor's runtime when a job starts),
so the wheel is tagged py3-none-<platform> and serves every Python.

Where the C++ sources come from, first found wins:
  1. $HVDA_SOURCE_DIR: a horovod_accel checkout (the folder holding csrc/);
  2. _csrc/ beside this file: an sdist of this package carries a copy of
     csrc/ there;
  3. the folders above this file: packaging/horovod_accel_<device> sits two
     levels under the repository root, and `pip wheel packaging/horovod_accel_<device>`
     builds in place, so the checkout's csrc/ is found.
Other knobs: HVDA_DEVICES_BUILD_DIR (CMake build folder, reused between
builds; default <build_temp>/cmake), HVDA_BUILD_TYPE (default Release),
HVDA_BUILD_JOBS (default: the number of CPUs), HVDA_SETUPTOOLS_BUILD_BASE
(setuptools' own build folder, default build/; scripts/build_wheels.sh makes
it fresh for each wheel).
"""
import glob
import os
import shutil

from cmake_build import cmake_executable, configure_and_build, reset_if_other_source  # beside this file
from setuptools import Distribution, setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

try:  # setuptools >= 70.1 ships bdist_wheel itself
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # pragma: no cover - older setuptools
    from wheel.bdist_wheel import bdist_wheel

VERSION = "0.1.0"
# Set by setup_plugin() before anything below runs (one plugin per build).
DEVICE = PACKAGE = TARGET = LIBRARY = HERE = None


def source_dir():
    """The folder holding devices/CMakeLists.txt (a checkout's csrc/, or its copy)."""
    candidates = []
    if os.environ.get("HVDA_SOURCE_DIR"):
        candidates.append(os.path.join(os.environ["HVDA_SOURCE_DIR"], "csrc"))
    candidates.append(os.path.join(HERE, "_csrc"))
    d = HERE
    while True:
        candidates.append(os.path.join(d, "csrc"))
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    for c in candidates:
        if os.path.isfile(os.path.join(c, "devices", "CMakeLists.txt")):
            return c
    raise RuntimeError(
        f"{PACKAGE}: cannot find the device plugins' sources (csrc/devices/CMakeLists.txt); "
        f"looked in {candidates}. Build from a horovod_accel checkout "
        f"(pip wheel packaging/{PACKAGE}) or set HVDA_SOURCE_DIR to one.")


def build_plugin(build_temp):
    """Configures csrc/devices and builds TARGET; returns the library's path."""
    src = os.path.join(source_dir(), "devices")
    build_dir = os.path.abspath(os.environ.get("HVDA_DEVICES_BUILD_DIR",
                                               os.path.join(build_temp, "cmake")))
    reset_if_other_source(build_dir, src)
    cmake = cmake_executable(PACKAGE)
    jobs = os.environ.get("HVDA_BUILD_JOBS", str(os.cpu_count() or 2))
    configure_and_build(cmake, src, build_dir,
                        [f"-DCMAKE_BUILD_TYPE={os.environ.get('HVDA_BUILD_TYPE', 'Release')}"],
                        [TARGET], jobs, PACKAGE)
    lib = os.path.join(build_dir, LIBRARY)
    if not os.path.isfile(lib):  # tolerate a LIBRARY_OUTPUT_DIRECTORY below the build folder
        found = sorted(glob.glob(os.path.join(build_dir, "**", LIBRARY), recursive=True))
        if not found:
            raise RuntimeError(f"{PACKAGE}: target {TARGET} built, but {LIBRARY} is not under {build_dir}")
        lib = found[0]
    return lib


class BuildPyWithPlugin(build_py):
    """build_py, plus the plugin library copied into the package."""

    def run(self):
        super().run()
        lib = build_plugin(self.get_finalized_command("build").build_temp)
        if getattr(self, "editable_mode", False):  # pip install -e: next to the sources
            dest = os.path.join(HERE, PACKAGE)
        else:
            dest = os.path.join(self.build_lib, PACKAGE)
        os.makedirs(dest, exist_ok=True)
        shutil.copy2(lib, os.path.join(dest, LIBRARY))

    def get_outputs(self, include_bytecode=True):
        return super().get_outputs(include_bytecode) + [os.path.join(self.build_lib, PACKAGE, LIBRARY)]


class BinaryDistribution(Distribution):
    """Holds a native library: installed to platlib, in a platform wheel."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    """A platform wheel (it holds a .so) usable by every Python 3: py3-none-<plat>."""

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat


class SdistWithSources(sdist):
    """An sdist that builds anywhere: it carries a copy of csrc/ in _csrc/ (the
    plugins compile csrc/devices and csrc/kernels, and include core headers)."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        shutil.copytree(source_dir(), os.path.join(base_dir, "_csrc"),
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "*.o"),
                        dirs_exist_ok=True)
        for helper in ("plugin_wheel.py", "cmake_build.py"):
            shutil.copy2(os.path.join(os.path.dirname(os.path.abspath(__file__)), helper),
                         os.path.join(base_dir, helper))


def setup_plugin(device, here):
    """setup() of the horovod_accel_<device> wheel whose setup.py is in `here`."""
    global DEVICE, PACKAGE, TARGET, LIBRARY, HERE
    DEVICE = device
    PACKAGE = f"horovod_accel_{device}"
    TARGET = f"horovod_accel_{device}"  # CMake target in csrc/devices
    LIBRARY = f"lib{TARGET}.so"         # what the target produces
    HERE = here
    options = {}
    if os.environ.get("HVDA_SETUPTOOLS_BUILD_BASE"):
        options["build"] = {"build_base": os.environ["HVDA_SETUPTOOLS_BUILD_BASE"]}

    setup(
        name=PACKAGE,
        version=VERSION,
        description=f"{DEVICE.upper()} device plugin for horovod_accel",
        long_description=open(os.path.join(HERE, "README.md"), encoding="utf-8").read(),
        long_description_content_type="text/markdown",
        packages=[PACKAGE],
        distclass=BinaryDistribution,
        python_requires=">=3.10",
        license_expression="Apache-2.0",
        # Links to the repository's files (packaging/horovod_accel_<device>/),
        # which setuptools copies as files into the wheel and the sdist.
        license_files=["LICENSE", "THIRD_PARTY_NOTICES.md"],
        install_requires=["horovod_accel>=0.1.0"],
        entry_points={"horovod_accel.plugins": [f"{DEVICE} = {PACKAGE}:library_path"]},
        cmdclass={"build_py": BuildPyWithPlugin, "bdist_wheel": PlatformWheel, "sdist": SdistWithSources},
        options=options,
        zip_safe=False,
    )
