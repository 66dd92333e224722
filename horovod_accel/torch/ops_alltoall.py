"""alltoall, reducescatter and grouped_reducescatter (async and autograd variants).

See ops_allreduce.py for the contracts every op shares (non-blocking enqueue,
ValueError at enqueue, HorovodInternalError at synchronize, non-contiguous
inputs made contiguous).

alltoall outputs depend on every rank's splits, so the core allocates them and
they come back zero-copy. reducescatter outputs are preallocated here: rank r
of a set of n ranks receives d0 // n rows, plus one if r < d0 % n (the extra
rows go to the lowest ranks, as upstream).
"""
import torch

from horovod_accel.common.basics import HorovodBasics
from horovod_accel.common.default_runtime import DEFAULT_RUNTIME
from horovod_accel.common.process_sets import global_process_set
from horovod_accel.common.process_sets import registered_id
from horovod_accel.common.shapes import scattered_rows
from horovod_accel.torch import tensors as _t
from horovod_accel.torch.compression import Compression
from horovod_accel.common.handles import submit, submit_internal
from horovod_accel.torch import traced as _traced
from horovod_accel.torch.traced import tracing as _tracing
from horovod_accel.torch.handles import synchronize
from horovod_accel.torch.ops_gather import allgather, grouped_allgather

# ---------------------------------------------------------------- alltoall


def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    """Starts an alltoall: rows [sum(splits[:i]), sum(splits[:i+1])) of dim 0
    go to set rank i; the received blocks are concatenated in set-rank order.

    splits: None (equal split; dim 0 must be divisible by the set size), a
    list of ints or a 1-D integer tensor with one entry per set rank summing to
    dim 0 (otherwise ValueError). Returns a handle; synchronize(handle) returns
    (output, received_splits), received_splits being the number of rows
    received from each rank (dtype and device of `splits` if it is a tensor,
    else an int32 CPU tensor, as upstream).
    """
    if _tracing():
        return _traced.alltoall_async(tensor, splits, name, process_set)
    ps_id = registered_id(process_set)
    rt = DEFAULT_RUNTIME.initialized_runtime()
    inp = _t.as_input(tensor)
    dtype, device = _t.dtype_code(inp), _t.device_id(inp)
    send_splits = _t.splits_list(splits)
    if isinstance(splits, torch.Tensor):
        splits_dtype, splits_device = splits.dtype, splits.device
    else:
        splits_dtype, splits_device = torch.int32, None

    def finish(works):
        out = _t.output_tensor(works[0].output(), inp.dtype, inp.device)
        received = torch.tensor(list(works[0].received_splits()), dtype=splits_dtype,
                                device=splits_device)
        return out, received

    return submit("alltoall", name, ps_id,
                  lambda core_name: rt.enqueue_alltoall(core_name, ps_id, inp.data_ptr(), dtype, _t.shape(inp),
                                              device, send_splits),
                  keep=(tensor, inp), finish=finish)


class HorovodAlltoall(torch.autograd.Function):
    """alltoall with gradient: backward sends each gradient block back to the
    rank it came from (alltoall of the gradient with the received splits)."""

    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        output, received_splits = synchronize(alltoall_async(tensor, splits, name, process_set))
        ctx.process_set = process_set
        ctx.received_splits = received_splits
        ctx.mark_non_differentiable(received_splits)
        return output, received_splits

    @staticmethod
    def backward(ctx, grad_output, grad_received_splits):
        grad, _ = synchronize(alltoall_async(grad_output, ctx.received_splits,
                                             process_set=ctx.process_set))
        return grad, None, None, None


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Blocking alltoall (see alltoall_async). Returns the output tensor if
    `splits` is None, else (output, received_splits). Differentiable."""
    if _tracing():
        return _traced.alltoall(tensor, splits, name, process_set)
    output, received_splits = HorovodAlltoall.apply(tensor, splits, name, process_set)
    if splits is None:
        return output
    return output, received_splits


# ---------------------------------------------------------------- reducescatter


def _check_reducescatter(tensor):
    # Checked here, not only by the core, because the output is sized from
    # dim 0 before enqueue. (The core rejects op=Adasum at enqueue.)
    if isinstance(tensor, torch.Tensor) and tensor.dim() == 0:
        raise ValueError("reducescatter needs a tensor with at least one dimension (the result "
                         "is split along dim 0); got a scalar. Use allreduce for scalars.")


def _scattered_output(rt, ps_id, process_set, inp):
    """Preallocated output of this rank: its share of dim 0 (see module doc)."""
    set_rank = rt.process_set_rank(ps_id)
    if set_rank < 0:
        raise ValueError(f"This process (rank {rt.rank()}) is not a member of {process_set}; "
                         f"only members may run collectives on it.")
    rows = scattered_rows(inp.shape[0], rt.process_set_size(ps_id), set_rank)
    return torch.empty((rows, *inp.shape[1:]), dtype=inp.dtype, device=inp.device)


def reducescatter_async(tensor, name=None, op=HorovodBasics.Average, process_set=global_process_set,
                        prescale_factor=1.0, postscale_factor=1.0):
    """Starts reducing `tensor` (same shape on every rank) over `process_set`
    and scattering the result along dim 0: this rank receives its share of
    rows (see module doc). op: Average (default), Sum, Min, Max or Product;
    Adasum raises NotImplementedError (a RuntimeError, as upstream), a scalar
    tensor ValueError. Returns a handle;
    synchronize(handle) returns the new tensor."""
    _check_reducescatter(tensor)
    if _tracing():
        return _traced.reducescatter_async(tensor, name, op, process_set, prescale_factor,
                                           postscale_factor)
    ps_id = registered_id(process_set)
    rt = DEFAULT_RUNTIME.initialized_runtime()
    inp = _t.as_input(tensor)
    dtype, device = _t.dtype_code(inp), _t.device_id(inp)
    out = _scattered_output(rt, ps_id, process_set, inp)
    return submit("reducescatter", name, ps_id,
                  lambda core_name: rt.enqueue_reducescatter(core_name, ps_id, inp.data_ptr(), out.data_ptr(),
                                                   dtype, _t.shape(inp), device, op,
                                                   prescale_factor, postscale_factor),
                  keep=(tensor, inp, out), finish=lambda works: out)


def _scatter_grad_scale(op, prescale_factor, postscale_factor, set_size):
    """d(output)/d(input) of a reducescatter is the constant this returns
    (Sum/Average only; the others have no useful gradient here)."""
    if op == HorovodBasics.Sum:
        return prescale_factor * postscale_factor
    if op == HorovodBasics.Average:
        return prescale_factor * postscale_factor / set_size
    raise NotImplementedError(f"The gradient of reducescatter is only defined for op=Sum or "
                              f"op=Average (got op={op}); detach the input to skip it.")


def _scaled(grad, scale):
    return grad if scale == 1.0 else grad * scale


class HorovodReducescatter(torch.autograd.Function):
    """reducescatter with gradient: backward allgathers the output gradients
    (each rank's input rows came back to it as one block) and scales them by
    the op's derivative (pre x post, and 1/set size for Average)."""

    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale_factor, postscale_factor):
        ctx.op = op
        ctx.process_set = process_set
        ctx.scale_factors = (prescale_factor, postscale_factor)
        return synchronize(reducescatter_async(tensor, name, op, process_set, prescale_factor,
                                               postscale_factor))

    @staticmethod
    def backward(ctx, grad_output):
        scale = _scatter_grad_scale(ctx.op, *ctx.scale_factors, ctx.process_set.size())
        grad = allgather(grad_output, process_set=ctx.process_set)
        return _scaled(grad, scale), None, None, None, None, None


def reducescatter(tensor, name=None, compression=Compression.none, op=HorovodBasics.Average,
                  process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    """Blocking reducescatter returning a new tensor (see
    reducescatter_async). `compression` compresses before and decompresses
    after the collective. Differentiable for op Sum and Average."""
    _check_reducescatter(tensor)
    if _tracing():
        return _traced.reducescatter(tensor, name, compression, op, prescale_factor,
                                     postscale_factor, process_set)
    compressed, ctx = compression.compress(tensor)
    reduced = HorovodReducescatter.apply(compressed, name, op, process_set, prescale_factor,
                                         postscale_factor)
    return compression.decompress(reduced, ctx)


# ---------------------------------------------------------------- grouped


def grouped_reducescatter_async(tensors, name=None, op=HorovodBasics.Average,
                                process_set=global_process_set, prescale_factor=1.0,
                                postscale_factor=1.0):
    """Starts reducescattering a list of tensors as one group (negotiated
    together; tensor i is named '<base>_<i+1>of<n>'). synchronize() returns
    the list of new tensors."""
    tensors = list(tensors)
    for t in tensors:
        _check_reducescatter(t)
    if _tracing():
        return _traced.grouped_reducescatter_async(tensors, name, op, process_set,
                                                   prescale_factor, postscale_factor)
    ps_id = registered_id(process_set)
    rt = DEFAULT_RUNTIME.initialized_runtime()
    if not tensors:
        return submit_internal("grouped_reducescatter.empty", lambda: [], keep=(),
                               finish=lambda works: [])
    inps = [_t.as_input(t) for t in tensors]
    dtypes = [_t.dtype_code(i) for i in inps]
    device = _t.common_device(inps)
    outs = [_scattered_output(rt, ps_id, process_set, i) for i in inps]
    return submit("grouped_reducescatter", name, ps_id,
                  lambda names: rt.enqueue_grouped_reducescatter(
                      names, ps_id, [i.data_ptr() for i in inps], [o.data_ptr() for o in outs],
                      dtypes, [_t.shape(i) for i in inps], device, op, prescale_factor,
                      postscale_factor),
                  keep=(tensors, inps, outs), finish=lambda works: list(outs),
                  group_size=len(tensors))


class HorovodGroupedReducescatter(torch.autograd.Function):
    """grouped_reducescatter with gradients (see HorovodReducescatter)."""

    @staticmethod
    def forward(ctx, name, op, process_set, prescale_factor, postscale_factor, *tensors):
        ctx.op = op
        ctx.process_set = process_set
        ctx.scale_factors = (prescale_factor, postscale_factor)
        return tuple(synchronize(grouped_reducescatter_async(tensors, name, op, process_set,
                                                             prescale_factor, postscale_factor)))

    @staticmethod
    def backward(ctx, *grad_outputs):
        scale = _scatter_grad_scale(ctx.op, *ctx.scale_factors, ctx.process_set.size())
        grads = grouped_allgather(list(grad_outputs), process_set=ctx.process_set)
        return (None, None, None, None, None, *[_scaled(g, scale) for g in grads])


def grouped_reducescatter(tensors, name=None, compression=Compression.none,
                          op=HorovodBasics.Average, process_set=global_process_set,
                          prescale_factor=1.0, postscale_factor=1.0):
    """Blocking grouped reducescatter returning a list of new tensors.
    Differentiable for op Sum and Average."""
    tensors = list(tensors)
    for t in tensors:
        _check_reducescatter(t)
    if _tracing():
        return _traced.grouped_reducescatter(tensors, name, compression, op, prescale_factor,
                                             postscale_factor, process_set)
    if not tensors:
        return []
    compressed, ctxs = zip(*[compression.compress(t) for t in tensors])
    reduced = HorovodGroupedReducescatter.apply(name, op, process_set, prescale_factor,
                                                postscale_factor, *compressed)
    return [compression.decompress(t, c) for t, c in zip(reduced, ctxs)]
