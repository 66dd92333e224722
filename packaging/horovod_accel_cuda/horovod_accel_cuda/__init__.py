"""horovod_accel_cuda: the CUDA device plugin of horovod_accel.

Installing this package is all it takes: horovod_accel finds the plugin
through the entry point `cuda = horovod_accel_cuda:library_path` of the group
`horovod_accel.plugins` (`horovodrun --check-build` lists it, and says why it
is unavailable where the CUDA runtime or NCCL is missing).
"""
import os

__version__ = "0.1.0"

LIBRARY = "libhorovod_accel_cuda.so"


def library_path():
    """The absolute path of the plugin library shipped in this package."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), LIBRARY)
