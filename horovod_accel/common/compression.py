"""The gradient-compression concept every adapter shares (upstream
`horovod.<framework>.compression`): a Compressor turns a tensor into its wire
form before a reduction, `compress(t) -> (t', ctx)`, and back after it,
`decompress(t', ctx) -> t`.

The classes here are framework-neutral. An adapter supplies its dtypes and
two tensor operations once and gets its public `Compression` namespace
(none, fp16, bf16) from `compression_namespace()`:

    FP16Compressor, BF16Compressor, Compression = compression_namespace(
        torch.float16, torch.bfloat16, is_floating=..., cast=...)

Cast compressors send floating-point tensors as float16 / bfloat16 and cast
them back to their original dtype; tensors of other dtypes pass unchanged.
"""


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


class CastCompressor(Compressor):
    """Sends floating-point tensors as `wire_dtype`; ctx is the original
    dtype. `is_floating(dtype)` and `cast(tensor, dtype)` are the adapter's
    (set by compression_namespace)."""

    wire_dtype = None
    is_floating = None
    cast = None

    @classmethod
    def compress(cls, tensor):
        dtype = tensor.dtype
        if cls.is_floating(dtype) and dtype != cls.wire_dtype:
            return cls.cast(tensor, cls.wire_dtype), dtype
        return tensor, dtype

    @classmethod
    def decompress(cls, tensor, ctx):
        if cls.is_floating(ctx) and tensor.dtype != ctx:
            return cls.cast(tensor, ctx)
        return tensor


def compression_namespace(float16, bfloat16, is_floating, cast):
    """(FP16Compressor, BF16Compressor, Compression) of a framework whose
    tensors have `.dtype`: float16/bfloat16 are its dtypes,
    is_floating(dtype) -> bool and cast(tensor, dtype) -> tensor its ops."""
    ops = {"is_floating": staticmethod(is_floating), "cast": staticmethod(cast)}
    fp16 = type("FP16Compressor", (CastCompressor,), {
        "__doc__": "Sends floating-point tensors as float16.", "wire_dtype": float16, **ops})
    bf16 = type("BF16Compressor", (CastCompressor,), {
        "__doc__": "Sends floating-point tensors as bfloat16 (wider range than float16).",
        "wire_dtype": bfloat16, **ops})
    namespace = type("Compression", (), {
        "__doc__": "Optional gradient compression algorithm used during allreduce.",
        "none": NoneCompressor, "fp16": fp16, "bf16": bf16})
    return fp16, bf16, namespace
