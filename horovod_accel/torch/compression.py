"""Gradient compression for allreduce/reducescatter (upstream
`horovod.torch.compression`): `compress(t) -> (t', ctx)` before the collective,
`decompress(t', ctx) -> t` after it."""
import torch


class Compressor:
    """Interface for compressing and decompressing a given tensor."""

    @staticmethod
    def compress(tensor):
        """Returns (compressed tensor, context needed to decompress it)."""
        raise NotImplementedError("Compressor subclasses implement compress()")

    @staticmethod
    def decompress(tensor, ctx):
        """Returns the tensor restored from its compressed form and ctx."""
        raise NotImplementedError("Compressor subclasses implement decompress()")


class NoneCompressor(Compressor):
    """Default: no compression."""

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class _CastCompressor(Compressor):
    """Casts floating-point tensors to `wire_dtype` and back; other dtypes pass unchanged."""

    wire_dtype = None

    @classmethod
    def compress(cls, tensor):
        compressed = tensor
        if tensor.dtype.is_floating_point:
            compressed = tensor.type(cls.wire_dtype)
        return compressed, tensor.dtype

    @staticmethod
    def decompress(tensor, ctx):
        dtype = ctx
        if dtype.is_floating_point:
            return tensor.type(dtype)
        return tensor


class FP16Compressor(_CastCompressor):
    """Sends floating-point tensors as float16."""

    wire_dtype = torch.float16


class BF16Compressor(_CastCompressor):
    """Sends floating-point tensors as bfloat16 (wider range than float16)."""

    wire_dtype = torch.bfloat16


class Compression:
    """Optional gradient compression algorithm used during allreduce."""

    none = NoneCompressor
    fp16 = FP16Compressor
    bf16 = BF16Compressor
