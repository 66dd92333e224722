"""Gradient compression for horovod.jax: the shared concept of
horovod_accel/common/compression.py over JAX arrays (and tracers, so it works
inside jax.jit).

`Compression.fp16` / `Compression.bf16` send floating-point arrays as
float16 / bfloat16 (`astype`, differentiable and traceable) and cast the
result back to the original dtype; arrays of other dtypes (integers, bool,
complex) pass unchanged. `Compression.none` is the identity.
"""
import jax.numpy as jnp
import numpy as np

from horovod_accel.common.compression import Compressor, NoneCompressor, compression_namespace


def _is_floating(dtype):
    return bool(jnp.issubdtype(dtype, jnp.floating))


def _cast(array, dtype):
    return array.astype(dtype)


FP16Compressor, BF16Compressor, Compression = compression_namespace(
    np.dtype(jnp.float16), np.dtype(jnp.bfloat16), is_floating=_is_floating, cast=_cast)

__all__ = ["Compressor", "NoneCompressor", "FP16Compressor", "BF16Compressor", "Compression"]
