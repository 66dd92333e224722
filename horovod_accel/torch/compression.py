"""Gradient compression for allreduce/reducescatter (upstream
`horovod.torch.compression`): the shared concept of
horovod_accel/common/compression.py over torch tensors."""
import torch

from horovod_accel.common.compression import Compressor, NoneCompressor, compression_namespace

FP16Compressor, BF16Compressor, Compression = compression_namespace(
    torch.float16, torch.bfloat16, is_floating=lambda dtype: dtype.is_floating_point,
    cast=lambda tensor, dtype: tensor.to(dtype))

__all__ = ["Compressor", "NoneCompressor", "FP16Compressor", "BF16Compressor", "Compression"]
