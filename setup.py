"""Builds horovod_accel: the C++ core (one pybind11 extension, never compiled
against a deep-learning framework) driven by CMake, plus the Python packages."""
import os
import subprocess
import sys

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        out_dir = os.path.abspath(os.path.dirname(self.get_ext_fullpath(ext.name)))
        build_dir = os.path.abspath(os.environ.get("HVDA_BUILD_DIR", os.path.join(self.build_temp, "cmake")))
        os.makedirs(build_dir, exist_ok=True)
        src = os.path.dirname(os.path.abspath(__file__))
        cfg = [
            f"-DHVDA_PYTHON_OUTPUT_DIR={out_dir}",
            f"-DPython3_EXECUTABLE={sys.executable}",
            f"-DCMAKE_BUILD_TYPE={os.environ.get('HVDA_BUILD_TYPE', 'Release')}",
            f"-DHVDA_BUILD_TESTS={os.environ.get('HVDA_BUILD_TESTS', 'OFF')}",
        ]
        subprocess.check_call(["cmake", "-S", src, "-B", build_dir] + cfg)
        jobs = os.environ.get("HVDA_BUILD_JOBS", str(os.cpu_count() or 2))
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "_core", "-j", jobs])


setup(
    name="horovod_accel",
    version="0.1.0",
    description="Drop-in, upstream-compatible Horovod with a pluggable accelerator layer",
    packages=find_packages(include=["horovod_accel", "horovod_accel.*", "horovod", "horovod.*"]),
    ext_modules=[CMakeExtension("horovod_accel._core")],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
    install_requires=["cloudpickle"],
    extras_require={"torch": ["torch"], "test": ["pytest", "numpy"]},
    entry_points={"console_scripts": ["horovodrun = horovod_accel.runner.launch:run_commandline"]},
    zip_safe=False,
)
