"""Loads the wheels' Python-independent binaries with ctypes on an older
glibc (test_wheels_in_container.py runs it on Debian 11, glibc 2.31, whose
Python 3.9 cannot import a cp311 core): each plugin library, whose entry
point must hand back its table to a core of ABI 1.1 (older than the
plugins'), and the MXNet engine library.
Usage: python3 load_on_old_glibc.py UNPACKED_WHEELS_DIR"""
import ctypes
import glob
import os
import platform
import sys

root = sys.argv[1]
print("glibc", platform.libc_ver()[1], flush=True)
plugins = sorted(glob.glob(os.path.join(root, "horovod_accel_*", "libhorovod_accel_*.so")))
if not plugins:
    sys.exit(f"no plugin library under {root}")
for lib in plugins:
    entry = ctypes.CDLL(lib).horovod_accel_plugin_v1
    entry.restype = ctypes.c_void_p
    entry.argtypes = [ctypes.c_uint32, ctypes.c_uint32]
    if not entry(1, 1):
        sys.exit(f"{lib}: the entry point declined ABI 1.1")
    print("OLD-GLIBC-LOADED", os.path.basename(lib), flush=True)
ctypes.CDLL(os.path.join(root, "horovod_accel", "mxnet", "libhvda_mxnet.so"))
print("OLD-GLIBC-LOADED libhvda_mxnet.so", flush=True)
