"""How torch tensors cross into the core: dtype codes, device ids, raw
pointers, contiguity, and zero-copy wrapping of core-allocated outputs.

The core reads/writes C-contiguous memory through raw addresses; whoever
passes a pointer keeps the tensor alive until the op's Work completes (the
handle object does that, see handles.py).
"""
import functools

import torch

from horovod_accel.common.default_runtime import DEFAULT_RUNTIME

# The binding's dtype codes (docs/design/core_binding.md; never renumbered).
DTYPE_CODES = {
    torch.uint8: 0,
    torch.int8: 1,
    torch.int16: 2,
    torch.int32: 3,
    torch.int64: 4,
    torch.float16: 5,
    torch.bfloat16: 6,
    torch.float32: 7,
    torch.float64: 8,
    torch.bool: 9,
}
_SUPPORTED = ", ".join(str(d).replace("torch.", "") for d in DTYPE_CODES)


def dtype_code(tensor):
    """The core's dtype code of tensor; ValueError for non-tensors and
    unsupported dtypes."""
    if not isinstance(tensor, torch.Tensor):
        raise ValueError(f"Horovod ops take torch.Tensor arguments, got {type(tensor).__name__}.")
    code = DTYPE_CODES.get(tensor.dtype)
    if code is None:
        raise ValueError(f"Tensor type {tensor.dtype} is not supported by Horovod; "
                         f"supported: {_SUPPORTED}.")
    return code


@functools.lru_cache(maxsize=None)
def _device_module(device_type):
    """(current_device, current_stream, stream handle attributes, raw stream
    getter) of torch.<device_type>, looked up once per type: the lookup goes
    through torch's module __getattr__, which costs more than the rest of an
    enqueue. The raw getter (torch._C._cuda_getCurrentRawStream and its xpu /
    mtia siblings, where this torch build has one) returns the native handle
    without building a Stream object."""
    mod = getattr(torch, device_type, None)
    return (getattr(mod, "current_device", None), getattr(mod, "current_stream", None),
            (f"{device_type}_stream", "native_handle", "cuda_stream"),
            getattr(torch._C, f"_{device_type}_getCurrentRawStream", None))


def _index(device):
    if device.index is not None:
        return device.index
    current = _device_module(device.type)[0]
    return int(current()) if current is not None else 0


def native_stream(device):
    """The framework's current native stream handle on an accelerator device
    (cudaStream_t / topsStream_t as an int; 0 = the default stream): the core
    orders its communication stream after the work queued there."""
    _, current_stream, handle_attrs, raw = _device_module(device.type)
    if raw is not None:
        return int(raw(_index(device)))
    if current_stream is None:
        return 0
    stream = current_stream(device)
    for attr in handle_attrs:
        handle = getattr(stream, attr, None)
        if handle is not None:
            return int(handle)
    return 0


@functools.lru_cache(maxsize=256)
def _device_ref(device_type, index, stream):
    # DeviceRef is immutable; building one is a pybind11 construction per op.
    return DEFAULT_RUNTIME.core().DeviceRef(device_type, index, stream)


def device_id(tensor):
    """-1 for CPU tensors (upstream's convention), else a `_core.DeviceRef`
    (device type, index, current native stream)."""
    if tensor.is_cpu:
        return -1
    device = tensor.device
    return _device_ref(device.type, _index(device), native_stream(device))


def common_device(tensors):
    """The device (see device_id) shared by all tensors of a grouped op;
    RuntimeError otherwise (upstream's callers catch RuntimeError here)."""
    # t.device builds a torch.device (and .type a string) per call; CPU
    # tensors, the common case, need neither.
    if all(t.is_cpu for t in tensors):
        return -1
    devices = {(t.device.type, _index(t.device)) if t.device.type != "cpu" else None
               for t in tensors}
    if len(devices) > 1:
        raise RuntimeError(f"Tensors in a grouped operation must be on the same device; got "
                         f"{sorted({str(t.device) for t in tensors})}.")
    return device_id(tensors[0]) if tensors else -1


def as_input(tensor):
    """A C-contiguous tensor with tensor's values: the tensor itself when
    already contiguous (the core only takes its address), else a detached
    contiguous copy."""
    if not isinstance(tensor, torch.Tensor):
        raise ValueError(f"Horovod ops take torch.Tensor arguments, got {type(tensor).__name__}.")
    return tensor if tensor.is_contiguous() else tensor.detach().contiguous()


def ptr(tensor):
    return tensor.data_ptr()


def shape(tensor):
    return list(tensor.shape)


def output_tensor(buf, dtype, device):
    """Wraps a core-allocated `_core.OutputBuffer` as a tensor without copying.

    The tensor references `buf`, which keeps the core's memory alive for as
    long as the tensor (or any view of it) lives.
    """
    out_shape = list(buf.shape)
    if buf.nbytes == 0:
        return torch.empty(out_shape, dtype=dtype, device=device)
    if hasattr(buf, "copy_to"):  # a `_core.DeviceOutput`: accelerator memory
        out = torch.empty(out_shape, dtype=dtype, device=device)
        buf.copy_to(out.data_ptr(), native_stream(out.device))
        return out
    flat = torch.frombuffer(buf, dtype=dtype)
    # set_ shares the storage without making a view, so the result behaves
    # like a freshly allocated tensor (in-place ops on it are fine even when
    # it is the output of an autograd Function).
    out = torch.empty(0, dtype=dtype)
    out.set_(flat.untyped_storage(), 0, out_shape)
    return out


def copy_back(original, worked_on):
    """Result of an in-place op: `original` holding the values of
    `worked_on` (the contiguous buffer the core wrote into). Copies only when
    worked_on is a separate contiguous copy of a non-contiguous original."""
    if worked_on is original:
        return original
    if worked_on.data_ptr() != original.data_ptr() or not original.is_contiguous():
        with torch.no_grad():
            original.copy_(worked_on)
    return original


def output_for(tensor, inp, in_place):
    """(out, finish) for an op whose result has inp's shape: in place, the core
    writes into `inp` and finish() returns `tensor` holding the result (copied
    back if `inp` is a contiguous copy); otherwise into a new tensor, which
    finish() returns. finish takes the op's Work list (unused)."""
    if in_place:
        return inp, lambda works: copy_back(tensor, inp)
    out = new_output(inp)
    return out, lambda works: out


def new_output(inp):
    """A new tensor of inp's shape, dtype and device for an out-of-place
    result (what output_for(..., in_place=False) returns, without its
    finish closure, for the per-op paths)."""
    return torch.empty(inp.shape, dtype=inp.dtype, device=inp.device)


def splits_list(splits):
    """alltoall splits (None, list/tuple of ints, or a 1-D integer tensor) as a
    list of ints; [] means an equal split."""
    if splits is None:
        return []
    if isinstance(splits, torch.Tensor):
        if splits.dim() != 1 or splits.dtype.is_floating_point or splits.dtype == torch.bool:
            raise ValueError(f"alltoall splits must be a 1-D integer tensor, got dtype "
                             f"{splits.dtype} with shape {list(splits.shape)}.")
        return [int(s) for s in splits.cpu().tolist()]
    try:
        return [int(s) for s in splits]
    except (TypeError, ValueError):
        raise ValueError(f"alltoall splits must be a list of ints or a 1-D integer tensor, "
                         f"got {splits!r}.") from None
