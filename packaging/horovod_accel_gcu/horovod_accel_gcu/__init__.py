"""horovod_accel_gcu: the GCU device plugin of horovod_accel.

Installing this package is all it takes: horovod_accel finds the plugin
through the entry point `gcu = horovod_accel_gcu:library_path` of the group
`horovod_accel.plugins` (`horovodrun --check-build` lists it, and says why it
is unavailable where the vendor runtime is missing).
"""
import os

__version__ = "0.1.0"

LIBRARY = "libhorovod_accel_gcu.so"


def library_path():
    """The absolute path of the plugin library shipped in this package."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), LIBRARY)
