"""Builds horovod_accel: the C++ core (one pybind11 extension, never compiled
against a deep-learning framework) driven by CMake, plus the Python packages.

The core wheel (`pip wheel --no-build-isolation -w dist .`, or
scripts/build_wheels.sh for the core and every device-plugin wheel) holds the
`horovod` and `horovod_accel` packages, `horovod_accel/_core*.so` (the core
and the CPU device), the MPI shims `horovod_accel/libhvda_mpi_*.so` and the
TensorFlow op library `horovod_accel/tensorflow/libhvda_tf_ops.so`, which is
built without TensorFlow (its C API declared by csrc/tensorflow/tf_c_api.h),
so a plain isolated `pip install .` has TensorFlow support whether
tensorflow is installed before or after (docs/design/tensorflow.md). Device
plugins (GCU, CUDA, ...) are separate wheels under packaging/. Release wheels
(scripts/build_wheels.sh) link a static Gloo (scripts/build_gloo.sh, named by
HVDA_GLOO_ROOT) and are tagged manylinux by `auditwheel repair`; a plain
source build uses the system's Gloo (Debian/Ubuntu libgloo-dev) and says so
in one line when it is missing (docs/design/packaging.md).

Environment knobs:
  HVDA_BUILD_DIR     CMake build folder (default: <build_temp>/cmake); reused
                     between builds, so a rebuild is incremental
  HVDA_BUILD_TYPE    CMAKE_BUILD_TYPE (default Release)
  HVDA_BUILD_TESTS   ON also configures the C++ unit tests (default OFF; the
                     extension target is built either way, tests never are)
  HVDA_BUILD_JOBS    parallel compile jobs (default: the number of CPUs)
  HVDA_BUILD_TENSORFLOW  OFF leaves the TensorFlow op library out (default ON)
  HVDA_GLOO_ROOT     prefix of a Gloo build (scripts/build_gloo.sh) to link
                     instead of the system's
  HVDA_OPENMPI_INCLUDE_DIR, HVDA_MPICH_INCLUDE_DIR  where mpi.h of each MPI
                     family is, when no mpicc wrapper on PATH says (the MPI
                     shims are skipped without them, docs/design/mpi.md)
  HVDA_SETUPTOOLS_BUILD_BASE  setuptools' own build folder (default build/);
                     scripts/build_wheels.sh points it at a fresh folder so a
                     wheel never picks up stale files of an earlier build
"""
import glob
import os
import re
import sys

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "packaging"))
from cmake_build import cmake_executable, configure_and_build, reset_if_other_source  # noqa: E402


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        out_dir = os.path.abspath(os.path.dirname(self.get_ext_fullpath(ext.name)))
        build_dir = os.path.abspath(os.environ.get("HVDA_BUILD_DIR", os.path.join(self.build_temp, "cmake")))
        reset_if_other_source(build_dir, HERE)
        cmake = cmake_executable()
        cfg = [
            f"-DHVDA_PYTHON_OUTPUT_DIR={out_dir}",
            f"-DPython3_EXECUTABLE={sys.executable}",
            f"-DCMAKE_BUILD_TYPE={os.environ.get('HVDA_BUILD_TYPE', 'Release')}",
            f"-DHVDA_BUILD_TESTS={os.environ.get('HVDA_BUILD_TESTS', 'OFF')}",
            f"-DHVDA_BUILD_TENSORFLOW={'ON' if _tensorflow_ops_enabled() else 'OFF'}",
        ]
        if os.environ.get("HVDA_GLOO_ROOT"):
            cfg.append(f"-DCMAKE_PREFIX_PATH={os.path.abspath(os.environ['HVDA_GLOO_ROOT'])}")
        for var in ("HVDA_OPENMPI_INCLUDE_DIR", "HVDA_MPICH_INCLUDE_DIR"):  # csrc/mpi/CMakeLists.txt
            if os.environ.get(var):
                cfg.append(f"-D{var}={os.environ[var]}")
        targets = ["_core"]
        if _tensorflow_ops_enabled():
            # The TensorFlow op library (csrc/tensorflow): built whether or
            # not tensorflow is installed (it needs no TensorFlow to build).
            targets.append("hvda_tf_ops")
        # The MXNet engine library (csrc/mxnet): needs no MXNet to build either.
        targets.append("hvda_mxnet")
        # The JAX FFI library (csrc/jax): needs jaxlib's XLA FFI headers; without
        # them the target only says it was skipped.
        targets.append("hvda_jax")
        jobs = os.environ.get("HVDA_BUILD_JOBS", str(os.cpu_count() or 2))
        configure_and_build(cmake, HERE, build_dir, cfg, targets, jobs, "horovod_accel")

    def copy_extensions_to_source(self):
        """Editable installs: setuptools copies only `_core` from its build
        folder into the source tree; the MPI shims CMake wrote beside it
        (libhvda_mpi_*.so, docs/design/mpi.md) go along."""
        super().copy_extensions_to_source()
        built = os.path.dirname(os.path.join(self.build_lib,
                                             self.get_ext_filename("horovod_accel._core")))
        package_dir = self.get_finalized_command("build_py").get_package_dir("horovod_accel")
        for lib in glob.glob(os.path.join(built, "libhvda_mpi_*.so")):
            self.copy_file(lib, os.path.join(package_dir, os.path.basename(lib)), level=self.verbose)
        mx_lib = os.path.join(built, "mxnet", "libhvda_mxnet.so")
        if os.path.exists(mx_lib):
            self.copy_file(mx_lib, os.path.join(package_dir, "mxnet", "libhvda_mxnet.so"),
                           level=self.verbose)
        jax_lib = os.path.join(built, "jax", "libhvda_jax.so")
        if os.path.exists(jax_lib):
            self.copy_file(jax_lib, os.path.join(package_dir, "jax", "libhvda_jax.so"),
                           level=self.verbose)
        tf_lib = os.path.join(built, "tensorflow", "libhvda_tf_ops.so")
        if os.path.exists(tf_lib):
            self.copy_file(tf_lib, os.path.join(package_dir, "tensorflow", "libhvda_tf_ops.so"),
                           level=self.verbose)


class BuildPyWithHeaders(build_py):
    """Puts the public C headers (csrc/include/horovod_accel/*.h: the plugin
    ABI and the core C API) into the package as horovod_accel/include/, so a
    vendor builds a plugin against an installed wheel
    (horovod_accel.get_include(), docs/vendor_guide.md)."""

    def run(self):
        super().run()
        dst = os.path.join(self.build_lib, "horovod_accel", "include", "horovod_accel")
        self.mkpath(dst)
        for header in glob.glob(os.path.join(HERE, "csrc", "include", "horovod_accel", "*.h")):
            self.copy_file(header, os.path.join(dst, os.path.basename(header)))


def _tensorflow_ops_enabled():
    """HVDA_BUILD_TENSORFLOW (default ON): build the TensorFlow op library."""
    return os.environ.get("HVDA_BUILD_TENSORFLOW", "ON").upper() not in ("OFF", "0", "NO", "FALSE")


def read_readme():
    try:
        with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


options = {}
if os.environ.get("HVDA_SETUPTOOLS_BUILD_BASE"):
    options["build"] = {"build_base": os.environ["HVDA_SETUPTOOLS_BUILD_BASE"]}


def read_version():
    """The one version of the package: horovod_accel/__init__.py's __version__
    (CMakeLists.txt reads it too, for the core's build info)."""
    with open(os.path.join(HERE, "horovod_accel", "__init__.py"), encoding="utf-8") as f:
        return re.search(r'^__version__ = "([^"]+)"', f.read(), re.M).group(1)


# Extras: the framework and cluster versions the test suite runs
# (scripts/setup*.sh; torch 2.11 also on an H100, docs/compat.md). Nothing is
# compiled against them, so other versions may work; these are the tested.
EXTRAS = {
    "torch": ["torch>=2.11,<2.14"],
    "tensorflow": ["tensorflow>=2.21,<2.22"],
    "tensorflow-cpu": ["tensorflow-cpu>=2.21,<2.22"],
    "keras": ["tensorflow>=2.21,<2.22"],
    "mxnet": ["mxnet==1.9.1", "numpy<1.24"],
    "jax": ["jax>=0.10.2,<0.11", "jaxlib>=0.10.2,<0.11", "optax"],
    "spark": ["pyspark>=4.3,<4.4", "pyarrow", "fsspec"],
    "ray": ["ray>=2.60,<2.61"],
    "test": ["pytest", "numpy", "mock", "parameterized"],
}

setup(
    name="horovod_accel",
    version=read_version(),
    description="Drop-in, upstream-compatible Horovod with a pluggable accelerator layer",
    long_description=read_readme(),
    long_description_content_type="text/markdown",
    license_expression="Apache-2.0",
    license_files=["LICENSE", "THIRD_PARTY_NOTICES.md"],
    project_urls={
        "Upstream Horovod": "https://github.com/horovod/horovod",
        "Upstream API reference": "https://horovod.readthedocs.io/en/stable/api.html",
    },
    keywords=["deep learning", "distributed training", "allreduce", "horovod", "mpi", "gloo"],
    classifiers=[
        "Development Status :: 4 - Beta",
        "Intended Audience :: Developers",
        "Intended Audience :: Science/Research",
        "Operating System :: POSIX :: Linux",
        "Programming Language :: C++",
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3 :: Only",
        "Programming Language :: Python :: 3.10",
        "Programming Language :: Python :: 3.11",
        "Programming Language :: Python :: 3.12",
        "Programming Language :: Python :: 3.13",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
        "Topic :: System :: Distributed Computing",
    ],
    packages=find_packages(include=["horovod_accel", "horovod_accel.*", "horovod", "horovod.*"]),
    ext_modules=[CMakeExtension("horovod_accel._core")],
    cmdclass={"build_ext": CMakeBuild, "build_py": BuildPyWithHeaders},
    python_requires=">=3.10",
    # No framework: the core is framework-neutral. The four are upstream
    # Horovod's own requirements (its scripts, e.g. the elastic tests, import
    # psutil and rely on Horovod to bring it).
    install_requires=["cloudpickle", "psutil", "pyyaml", "packaging"],
    extras_require=EXTRAS,
    entry_points={
        "console_scripts": ["horovodrun = horovod_accel.runner.launch:run_commandline"],
        # torch.compile(model, backend="horovod"): found by torch without an import.
        "torch_dynamo_backends": ["horovod = horovod_accel.torch.split_backend:horovod"],
    },
    options=options,
    zip_safe=False,
)
