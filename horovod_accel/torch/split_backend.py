"""A `torch.compile` backend that lets DistributedOptimizer's allreduces
overlap a compiled model's backward.

A compiled model's backward is one autograd node: every gradient becomes
ready when the whole compiled backward has finished, so DistributedOptimizer's
hooks (optimizer_base.register_hooks) all fire at its end and no bucket can
start earlier. This backend splits the traced forward graph into pieces
holding about `bucket_bytes` of parameters each (in reverse order of use,
where backward produces them first) and compiles every piece with the inner
backend; each piece's backward is then its own node, whose gradients are
ready, and whose buckets go to the core, while the earlier pieces'
backward still runs. The splitting is dynamo's own graph splitter for DDP
(`torch._dynamo.backends.distributed.DDPOptimizer`), which needs nothing of
torch.distributed. docs/torch_compile.md has the measurements.

    model = torch.compile(model, backend="horovod")                 # inductor inside
    model = torch.compile(model, backend=hvd.compile_backend("aot_eager", bucket_bytes=1 << 20))

The name "horovod" is registered through the `torch_dynamo_backends` entry
point (setup.py), so torch finds it without importing this module first.
"""
from horovod_accel.common.buckets import DEFAULT_BUCKET_BYTES


def compile_backend(backend="inductor", bucket_bytes=DEFAULT_BUCKET_BYTES):
    """A torch.compile backend: the graph split into pieces of about
    `bucket_bytes` of parameters (DistributedOptimizer's bucket size by
    default), each compiled by `backend` (a registered name or a backend
    callable). RuntimeError if this torch has no graph splitter."""
    if not isinstance(bucket_bytes, int) or isinstance(bucket_bytes, bool) or bucket_bytes <= 0:
        raise ValueError(f"bucket_bytes must be a positive number of bytes, got {bucket_bytes!r}.")
    try:
        from torch._dynamo.backends.distributed import DDPOptimizer  # noqa: PLC0415
        from torch._dynamo.backends.registry import lookup_backend  # noqa: PLC0415
    except ImportError as e:
        raise RuntimeError(
            f"This torch has no graph splitter for the 'horovod' compile backend ({e}); compile "
            f"with the default backend instead (training works the same; the gradient "
            f"allreduces then start after the compiled backward).") from e
    inner = lookup_backend(backend) if isinstance(backend, str) else backend

    def split_and_compile(gm, example_inputs, **kwargs):
        splitter = DDPOptimizer(bucket_bytes_cap=bucket_bytes, backend_compile_fn=inner,
                                first_bucket_cap=bucket_bytes)
        return splitter.compile_fn(gm, example_inputs, **kwargs)

    return split_and_compile


def horovod(gm, example_inputs, **kwargs):
    """The backend registered as "horovod": compile_backend() with inductor
    and DistributedOptimizer's default bucket size."""
    return compile_backend()(gm, example_inputs, **kwargs)
