"""How MXNet NDArrays cross into the core on the blocking path (allgather,
alltoall, object collectives) and how results come back; argument checks
shared with the engine path.

Blocking ops read an NDArray only after `wait_to_read()` (MXNet's engine has
finished writing it), through its raw address; the caller keeps the NDArray
alive until the core's Work completes (common/handles.py does that). Results
the core allocates are copied into new NDArrays.
"""
import ctypes

import mxnet as mx
import numpy as np
from mxnet.base import _LIB, check_call

from horovod_accel.mxnet.errors import InvalidArgumentError

# mshadow type flag -> (the core's dtype code, numpy dtype name); the same
# table as csrc/mxnet/mx_abi.h. MXNet's Python API creates no other types.
_DTYPES = {
    0: (7, "float32"), 1: (8, "float64"), 2: (5, "float16"), 3: (0, "uint8"),
    4: (3, "int32"), 5: (1, "int8"), 6: (4, "int64"), 7: (9, "bool"), 8: (2, "int16"),
    9: (10, "uint16"),
}
_HOST_DEVICES = ("cpu", "cpu_pinned", "cpu_shared")


def check_ndarray(tensor, what="tensor"):
    """InvalidArgumentError unless `tensor` is an NDArray on a CPU context."""
    if not isinstance(tensor, mx.nd.NDArray):
        raise InvalidArgumentError(f"Horovod ops take mxnet NDArrays; {what} is a "
                                   f"{type(tensor).__name__}.")
    if tensor.context.device_type not in _HOST_DEVICES:
        raise InvalidArgumentError(
            f"{what} is on {tensor.context}; horovod_accel's MXNet adapter reduces CPU NDArrays "
            f"only (copy it with .as_in_context(mx.cpu())).")


def dtype_code(tensor, what="tensor"):
    """The core's dtype code of a CPU NDArray; InvalidArgumentError for other
    arguments and for dtypes the core has no code for."""
    check_ndarray(tensor, what)
    flag = ctypes.c_int()
    check_call(_LIB.MXNDArrayGetDType(tensor.handle, ctypes.byref(flag)))
    entry = _DTYPES.get(flag.value)
    if entry is None:
        raise InvalidArgumentError(f"{what} has dtype {tensor.dtype}, which Horovod does not "
                                   f"support.")
    return entry[0]


def host_pointer(tensor):
    """The address of a CPU NDArray's elements, after waiting for every
    pending write of it (blocks; reorders MKLDNN-layout data to the default
    layout). 0 for an empty NDArray. Valid while the NDArray lives and is not
    written."""
    tensor.wait_to_read()
    ptr = ctypes.c_void_p()
    check_call(_LIB.MXNDArrayGetData(tensor.handle, ctypes.byref(ptr)))
    return ptr.value or 0


def empty_like(tensor, shape=None):
    """A new NDArray of tensor's dtype and context (and class: legacy
    NDArray or mx.np.ndarray) with `shape` (default: tensor's), contents
    undefined."""
    out = mx.nd.empty(tensor.shape if shape is None else tuple(shape), ctx=tensor.context,
                      dtype=tensor.dtype)
    if isinstance(tensor, mx.np.ndarray):
        out = out.as_np_ndarray()
    return out


def from_host(array, like):
    """A new NDArray holding numpy `array` (copied), on like's context and of
    like's class."""
    out = mx.nd.array(array, ctx=like.context, dtype=array.dtype)
    if isinstance(like, mx.np.ndarray):
        out = out.as_np_ndarray()
    return out


def from_core_output(buf, like):
    """The result the core allocated (a `_core.OutputBuffer`: bytes and
    shape) as a new NDArray of like's dtype, context and class."""
    shape = tuple(buf.shape)
    array = np.frombuffer(buf, dtype=np.dtype(like.dtype)).reshape(shape)
    return from_host(array, like)


def shape_of(tensor):
    return [int(d) for d in tensor.shape]
