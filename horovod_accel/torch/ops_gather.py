"""allgather, grouped_allgather, broadcast and sparse_allreduce_async.

allgather outputs depend on every rank's dim 0, so the core allocates them;
they come back zero-copy (the tensor shares the core's buffer). See
ops_allreduce.py for the contracts every op shares.
"""
import torch

from horovod_accel.common.basics import HorovodBasics
from horovod_accel.common.default_runtime import DEFAULT_RUNTIME
from horovod_accel.common.process_sets import global_process_set
from horovod_accel.common.process_sets import registered_id
from horovod_accel.torch import tensors as _t
from horovod_accel.common.handles import submit, submit_internal
from horovod_accel.torch import traced as _traced
from horovod_accel.torch.traced import tracing as _tracing
from horovod_accel.torch.handles import synchronize
from horovod_accel.torch.ops_allreduce import allreduce, grouped_allreduce


def _gathered(work, like):
    return _t.output_tensor(work.output(), like.dtype, like.device)


def allgather_async(tensor, name=None, process_set=global_process_set):
    """Starts concatenating `tensor` from every rank of `process_set` along
    dim 0 (dim 0 may differ per rank; other dims must match). Returns a
    handle; synchronize(handle) returns the new tensor."""
    if _tracing():
        return _traced.allgather_async(tensor, name, process_set)
    ps_id = registered_id(process_set)
    rt = DEFAULT_RUNTIME.initialized_runtime()
    dtype, device = _t.dtype_code(tensor), _t.device_id(tensor)
    inp = _t.as_input(tensor)
    return submit("allgather", name, ps_id,
                  lambda core_name: rt.enqueue_allgather(core_name, ps_id, inp.data_ptr(), dtype, _t.shape(inp),
                                               device),
                  keep=(tensor, inp), finish=lambda works: _gathered(works[0], inp))


def allgather_grads(grads, dims, process_set):
    """The gradients of an allgather (of one tensor, or a group) w.r.t. its
    inputs: each output gradient averaged over the set, then the rows that
    came from this rank. dims: this rank's dim 0 of each input. Shared by the
    eager Functions and the compiled op (custom_ops.allgather_backward)."""
    if len(grads) == 1:
        reduced = [allreduce(grads[0], op=HorovodBasics.Average, process_set=process_set)]
    else:
        reduced = grouped_allreduce(list(grads), op=HorovodBasics.Average,
                                    process_set=process_set)
    # Every rank's dim 0 of every input, [set size, len(dims)]; this rank's
    # rows start after the lower ranks'.
    every_dims = allgather(torch.tensor([list(dims)], dtype=torch.int64), process_set=process_set)
    offsets = every_dims[:process_set.rank()].sum(dim=0)
    return [g.narrow(0, int(o), d) for g, o, d in zip(reduced, offsets, dims)]


class HorovodAllgather(torch.autograd.Function):
    """allgather with gradient: backward averages the gradient over the set
    (allreduce Average) and returns this rank's rows."""

    @staticmethod
    def forward(ctx, tensor, name, process_set):
        ctx.dim = tensor.shape[0] if tensor.dim() > 0 else 0
        ctx.process_set = process_set
        return synchronize(allgather_async(tensor, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        return allgather_grads([grad_output], [ctx.dim], ctx.process_set)[0], None, None


def allgather(tensor, name=None, process_set=global_process_set):
    """Blocking allgather returning a new tensor. Differentiable."""
    if _tracing():
        return _traced.allgather(tensor, name, process_set)
    return HorovodAllgather.apply(tensor, name, process_set)


def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    """Starts allgathering a list of tensors as one group (tensor i is named
    '<base>_<i+1>of<n>'). synchronize() returns the list of new tensors."""
    if _tracing():
        return _traced.grouped_allgather_async(tensors, name, process_set)
    tensors = list(tensors)
    ps_id = registered_id(process_set)
    rt = DEFAULT_RUNTIME.initialized_runtime()
    if not tensors:
        return submit_internal("grouped_allgather.empty", lambda: [], keep=(),
                               finish=lambda works: [])
    dtypes = [_t.dtype_code(t) for t in tensors]
    device = _t.common_device(tensors)
    inps = [_t.as_input(t) for t in tensors]
    return submit("grouped_allgather", name, ps_id,
                  lambda names: rt.enqueue_grouped_allgather(
                      names, ps_id, [i.data_ptr() for i in inps], dtypes,
                      [_t.shape(i) for i in inps], device),
                  keep=(tensors, inps),
                  finish=lambda works: [_gathered(w, i) for w, i in zip(works, inps)],
                  group_size=len(tensors))


class HorovodGroupedAllgather(torch.autograd.Function):
    """grouped_allgather with gradients (see HorovodAllgather)."""

    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        ctx.dims = [t.shape[0] if t.dim() > 0 else 0 for t in tensors]
        ctx.process_set = process_set
        return tuple(synchronize(grouped_allgather_async(tensors, name, process_set)))

    @staticmethod
    def backward(ctx, *grad_outputs):
        return (None, None, *allgather_grads(grad_outputs, ctx.dims, ctx.process_set))


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    """Blocking grouped allgather returning a list of new tensors. Differentiable."""
    if _tracing():
        return _traced.grouped_allgather(tensors, name, process_set)
    tensors = list(tensors)
    if not tensors:
        return []
    return list(HorovodGroupedAllgather.apply(name, process_set, *tensors))


# ---------------------------------------------------------------- broadcast


def _broadcast_async(tensor, in_place, root_rank, name, process_set):
    ps_id = registered_id(process_set)
    rt = DEFAULT_RUNTIME.initialized_runtime()
    dtype, device = _t.dtype_code(tensor), _t.device_id(tensor)
    inp = _t.as_input(tensor)
    out, finish = _t.output_for(tensor, inp, in_place)
    return submit("broadcast", name, ps_id,
                  lambda core_name: rt.enqueue_broadcast(core_name, ps_id, inp.data_ptr(), out.data_ptr(), dtype,
                                               _t.shape(inp), device, int(root_rank)),
                  keep=(tensor, inp, out), finish=finish)


def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    """Starts broadcasting `tensor` from global rank `root_rank` into a new
    tensor (input unchanged). Returns a handle."""
    if _tracing():
        return _traced.broadcast_async(tensor, False, root_rank, name, process_set)
    return _broadcast_async(tensor, False, root_rank, name, process_set)


def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    """In-place broadcast_async: non-root ranks receive into `tensor`."""
    if _tracing():
        return _traced.broadcast_async(tensor, True, root_rank, name, process_set)
    return _broadcast_async(tensor, True, root_rank, name, process_set)


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    """Blocking in-place broadcast; returns `tensor`."""
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))


class HorovodBroadcast(torch.autograd.Function):
    """broadcast with gradient: backward averages the gradient over the set and
    zeroes it on every rank but the root."""

    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root_rank = root_rank
        ctx.process_set = process_set
        return synchronize(broadcast_async(tensor, root_rank, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad_reduced = allreduce(grad_output, op=HorovodBasics.Average, process_set=ctx.process_set)
        if DEFAULT_RUNTIME.initialized_runtime().rank() != ctx.root_rank:
            grad_reduced *= 0
        return grad_reduced, None, None, None


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """Blocking broadcast from global rank `root_rank`, returning a new tensor.
    Differentiable."""
    if _tracing():
        return _traced.broadcast(tensor, root_rank, name, process_set)
    return HorovodBroadcast.apply(tensor, root_rank, name, process_set)


# ---------------------------------------------------------------- sparse


def sparse_allreduce_async(tensor, name, op, process_set=global_process_set):
    """Starts reducing a sparse COO tensor as two allgathers (indices, values;
    named '<name>.indices' / '<name>.values'). Returns a callable that waits
    and returns the reduced sparse tensor (values divided by the set size for
    Average; duplicate indices are summed when the tensor is coalesced)."""
    t = tensor
    indices_handle = allgather_async(t._indices().transpose(0, 1).contiguous(), name=f"{name}.indices",
                                     process_set=process_set)
    values_handle = allgather_async(t._values(), name=f"{name}.values", process_set=process_set)

    def handle():
        values = synchronize(values_handle)
        indices = synchronize(indices_handle)
        if op == HorovodBasics.Average:
            values = values / process_set.size()
        if indices.dim() == 0 or values.dim() == 0:
            return t.new().resize_as_(t)
        return torch.sparse_coo_tensor(indices.transpose(0, 1), values, t.size(), check_invariants=False)

    return handle
