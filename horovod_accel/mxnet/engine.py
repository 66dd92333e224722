"""The MXNet engine library (libhvda_mxnet.so, csrc/mxnet/): loading,
binding and `push`, the one call every engine-path op makes.

A pushed collective is an asynchronous operation of MXNet's dependency
engine (csrc/mxnet/hvda_mxnet.h): it starts when the engine has finished the
earlier writes of its inputs and the earlier reads and writes of its
outputs, and MXNet's later reads of the outputs wait for it. `push` never
blocks. The library keeps its own references to the NDArrays until the op
completes, so callers may drop theirs at once.

The library is loaded on first use and bound to the process's core runtime
(`_core.Runtime.c_api()`) and to the MXNet C API functions of the
libmxnet.so that `import mxnet` loaded (their addresses; the library has no
link to libmxnet.so).
An op pushed before an hvd.shutdown() whose inputs are written only after
it fails instead of being submitted to the next job (hvda_mx_end_epoch).
"""
import ctypes
import os
import threading

from mxnet.base import _LIB as _MXLIB

from horovod_accel.common.default_runtime import DEFAULT_RUNTIME
from horovod_accel.mxnet.errors import InvalidArgumentError

# The core's op kinds (csrc/include/horovod_accel/core_api.h).
ALLREDUCE = 0
BROADCAST = 2
REDUCESCATTER = 7

_LIB_FILE = "libhvda_mxnet.so"
_BUILD_HINT = ("Build it with `bash scripts/setup_mxnet.sh`, or `cmake -S csrc/mxnet -B build/mxnet "
               "-DHVDA_PYTHON_OUTPUT_DIR=$PWD/horovod_accel && cmake --build build/mxnet` from the "
               "source tree (it needs no MXNet to build).")
_MX_FUNCTIONS = ("MXEnginePushAsyncND", "MXShallowCopyNDArray", "MXNDArrayFree",
                 "MXNDArrayToDLPack", "MXNDArrayGetShapeEx", "MXNDArrayGetDType",
                 "MXNDArrayGetContext", "MXGetLastError")

_VOIDP_ARRAY = ctypes.POINTER(ctypes.c_void_p)
_CHARP_ARRAY = ctypes.POINTER(ctypes.c_char_p)


class _Functions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t)] + [(n, ctypes.c_void_p) for n in _MX_FUNCTIONS]


_lock = threading.Lock()
_lib = None


def library_path():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), _LIB_FILE)


def _load():
    path = library_path()
    if not os.path.exists(path):
        raise ImportError(f"horovod_accel's MXNet engine library ({path}) is not built. {_BUILD_HINT}")
    lib = ctypes.CDLL(path)
    lib.hvda_mx_bind.argtypes = [ctypes.c_size_t, ctypes.c_size_t, ctypes.POINTER(_Functions)]
    lib.hvda_mx_bind.restype = ctypes.c_int
    lib.hvda_mx_push.argtypes = [ctypes.c_int32, ctypes.c_int32, _VOIDP_ARRAY, _VOIDP_ARRAY,
                                 _CHARP_ARRAY, ctypes.c_int32, ctypes.c_int32, ctypes.c_double,
                                 ctypes.c_double, ctypes.c_int32, ctypes.c_int32, ctypes.c_void_p]
    lib.hvda_mx_push.restype = ctypes.c_int
    lib.hvda_mx_last_error.argtypes = []
    lib.hvda_mx_last_error.restype = ctypes.c_char_p
    lib.hvda_mx_end_epoch.argtypes = []
    lib.hvda_mx_end_epoch.restype = None
    functions = _Functions(ctypes.sizeof(_Functions),
                           *[ctypes.cast(getattr(_MXLIB, n), ctypes.c_void_p).value
                             for n in _MX_FUNCTIONS])
    table, runtime = DEFAULT_RUNTIME.runtime().c_api()
    if lib.hvda_mx_bind(table, runtime, ctypes.byref(functions)) != 0:
        raise ImportError(f"{path} could not be connected: "
                          f"{lib.hvda_mx_last_error().decode(errors='replace')}. {_BUILD_HINT}")

    def after_init_or_shutdown():
        if not DEFAULT_RUNTIME.is_initialized():  # a shutdown (init() is idempotent)
            lib.hvda_mx_end_epoch()

    DEFAULT_RUNTIME.add_reset_listener(after_init_or_shutdown)
    return lib


def library():
    """The bound library (loaded on first call); ImportError if it is not
    built or does not match this core."""
    global _lib
    lib = _lib
    if lib is None:
        with _lock:
            if _lib is None:
                _lib = _load()
            lib = _lib
    return lib


def _handles(tensors):
    if len(tensors) == 1:
        return ctypes.byref(tensors[0].handle)
    return (ctypes.c_void_p * len(tensors))(*[t.handle for t in tensors])


def push(op_type, inputs, outputs, names, process_set_id, reduce_op=1, prescale=1.0,
         postscale=1.0, root_rank=-1, priority=0, order_after=None):
    """Pushes one collective over `inputs` (NDArrays; several form a group)
    writing `outputs` (NDArrays, or None: in place), named `names` (full core
    names, one per tensor), and returns at once. `order_after`: an NDArray the
    op also writes, so ops sharing it run in push order. InvalidArgumentError
    (nothing pushed) for what the library checks at the call; later failures
    surface as MXNetError when an output is read."""
    lib = _lib if _lib is not None else library()
    n = len(inputs)
    c_names = (ctypes.c_char_p * n)(*[s.encode() for s in names])
    rc = lib.hvda_mx_push(op_type, n, _handles(inputs),
                          None if outputs is None else _handles(outputs), c_names,
                          process_set_id, int(reduce_op), float(prescale), float(postscale),
                          int(root_rank), int(priority),
                          None if order_after is None else order_after.handle)
    if rc != 0:
        raise InvalidArgumentError(lib.hvda_mx_last_error().decode(errors="replace"))
