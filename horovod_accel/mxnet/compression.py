"""Gradient compression for horovod.mxnet (upstream
`horovod.mxnet.compression`): Compression.none and Compression.fp16, built on
the framework-neutral classes of horovod_accel/common/compression.py.

fp16 sends floating-point NDArrays as float16 (`astype(..., copy=False)`, so
a float16 NDArray passes unchanged) and casts the result back to the
original dtype; NDArrays of other dtypes pass unchanged.
"""
import numpy as np

from horovod_accel.common.compression import CastCompressor, Compressor, NoneCompressor


def _is_floating(dtype):
    return np.issubdtype(np.dtype(dtype), np.floating)


def _cast(tensor, dtype):
    return tensor.astype(dtype, copy=False)


class FP16Compressor(CastCompressor):
    """Compresses floating-point NDArrays to float16."""

    wire_dtype = np.float16
    is_floating = staticmethod(_is_floating)
    cast = staticmethod(_cast)


class Compression:
    """Optional gradient compression algorithm used during allreduce."""

    none = NoneCompressor
    fp16 = FP16Compressor


__all__ = ["Compression", "Compressor", "NoneCompressor", "FP16Compressor"]
