"""The torch collectives as `torch.library` custom ops (namespace `horovod`),
so `torch.compile` traces them into its graph instead of breaking it.

Each op's real kernel is the eager op of ops_*.py: the same enqueue, names,
errors and process-set rules run when the compiled graph executes. What the
compiler sees is a fake kernel (output shapes and dtypes without running
anything) and, for the blocking ops, an autograd formula equal to the eager
`torch.autograd.Function`'s backward.

Ops (all functional: they never write into their inputs):
- blocking: allreduce, grouped_allreduce, allgather, grouped_allgather,
  broadcast, alltoall, reducescatter, grouped_reducescatter. Differentiable.
- asynchronous pairs: `<op>_start(...)` enqueues and returns a handle tensor
  (an int64 scalar naming the pending op in `STARTED`); `wait(handle, inputs,
  kind, process_set)` synchronizes it and returns the results as a list.
  `wait` takes the op's inputs again so the compiler keeps their memory
  alive (and unmodified by later in-place ops) until the core is done
  reading it; their shapes and dtypes give wait's fake outputs.
- allgather_backward / grouped_allgather_backward: the allgather gradient
  (average over the set, then this rank's rows), whose row offset depends on
  the other ranks' dim 0 and so must run, not be traced.

Shapes the compiler cannot know (an allgather's or alltoall's dim 0 depends
on the other ranks) are unbacked symbolic sizes. Every op is registered as
side-effecting, so the compiler neither drops an unused collective nor
merges two: every rank then runs the same collectives in the same order.

Process sets cross as their integer id (resolved to the ProcessSet object in
the kernel); names as `str?` (None: the eager auto-name, drawn when the op
runs, so the graph holds no counter and never recompiles for it).
"""
import itertools
import threading
from typing import Optional

import torch
from torch._library import fake_impl as _fake_impl

from horovod_accel.common.basics import HorovodBasics
from horovod_accel.common.default_runtime import DEFAULT_RUNTIME
from horovod_accel.common.handles import synchronize
from horovod_accel.common.process_sets import process_set_by_id
from horovod_accel.common.shapes import scattered_rows
from horovod_accel.torch import ops_allreduce as _ar
from horovod_accel.torch import ops_alltoall as _a2a
from horovod_accel.torch import ops_gather as _ag

_NS = "horovod"
_Tensors = list[torch.Tensor]


class StartedOps:
    """Pending `<op>_start` handles by id, until `wait` collects them. Reset
    with the handle table on init()/shutdown() (every pending op has failed
    by then)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self._handles = {}

    def add(self, handle):
        with self._lock:
            key = next(self._ids)
            self._handles[key] = handle
        return torch.tensor(key, dtype=torch.int64)

    def take(self, key):
        with self._lock:
            handle = self._handles.pop(int(key), None)
        if handle is None:
            raise ValueError(f"horovod::wait got handle {int(key)}, which is not pending: it was "
                             f"already waited for, or hvd.shutdown()/init() ran since it started.")
        return handle

    def peek(self, key):
        with self._lock:
            handle = self._handles.get(int(key))
        if handle is None:
            raise ValueError(f"horovod::poll got handle {int(key)}, which is not pending.")
        return handle

    def reset(self):
        with self._lock:
            self._handles.clear()


STARTED = StartedOps()
DEFAULT_RUNTIME.add_reset_listener(STARTED.reset)


def _op(name, fake, mutates_args=()):
    """Registers `horovod::<name>` with the decorated eager kernel and `fake`;
    side-effecting (never dropped or deduplicated by the compiler)."""
    def register(kernel):
        op = torch.library.custom_op(f"{_NS}::{name}", kernel, mutates_args=mutates_args)
        op.register_fake(fake)
        torch.fx.node.has_side_effect(getattr(torch.ops, _NS).__getattr__(name).default)
        return op
    return register


# ---------------------------------------------------------------- fake shapes


def _set_shape(ps_id):
    """(this rank's index in the set, the set's size), read at trace time."""
    rt = DEFAULT_RUNTIME.initialized_runtime()
    return rt.process_set_rank(ps_id), rt.process_set_size(ps_id)


def _rows_known_when_run():
    """An unbacked symbolic size: a dim 0 that depends on the other ranks.

    `ctx.new_dynamic_size()` refuses unless the user opted into
    `torch._dynamo.config.capture_dynamic_output_shape_ops` (or fullgraph),
    and the refusal is a graph break that runs the collective eagerly
    anyway: for a collective, breaking buys nothing, so the size is
    allocated the way new_dynamic_size does it. Code that branches on the
    size still breaks the graph there (docs/torch_compile.md). A torch whose
    internals differ falls back to the public call."""
    ctx = torch.library.get_ctx()
    shape_env = getattr(ctx, "_shape_env", None)
    allocate = getattr(_fake_impl, "allocate_size", None)
    if shape_env is not None and allocate is not None:
        return allocate(shape_env, 0)
    return ctx.new_dynamic_size()


def _fake_same(t):
    return t.new_empty(t.shape)


def _fake_gathered(t):
    if t.dim() == 0:
        raise ValueError("allgather needs a tensor with at least one dimension, got a scalar.")
    return t.new_empty((_rows_known_when_run(), *t.shape[1:]))


def _fake_scattered(t, ps_id):
    # A scalar never gets here: the public ops reject it before tracing
    # (ops_alltoall._check_reducescatter).
    set_rank, n = _set_shape(ps_id)
    return t.new_empty((scattered_rows(t.shape[0], n, set_rank), *t.shape[1:]))


def _fake_alltoall(t, splits, ps_id):
    n = _set_shape(ps_id)[1]
    out = t.new_empty((_rows_known_when_run(), *t.shape[1:]))
    received = (splits.new_empty((n,)) if splits is not None
                else torch.empty((n,), dtype=torch.int32))
    return out, received


_FAKE_WAIT = {
    "same": lambda ts, ps_id: [_fake_same(t) for t in ts],
    "gathered": lambda ts, ps_id: [_fake_gathered(t) for t in ts],
    "scattered": lambda ts, ps_id: [_fake_scattered(t, ps_id) for t in ts],
    "alltoall": lambda ts, ps_id: list(_fake_alltoall(ts[0], ts[1] if len(ts) > 1 else None,
                                                      ps_id)),
}


def _fake_handle(*args):
    return torch.empty((), dtype=torch.int64)


# ---------------------------------------------------------------- blocking ops


@_op("allreduce", lambda t, name, op, pre, post, ps_id: _fake_same(t))
def allreduce(t: torch.Tensor, name: Optional[str], op: int, pre: float, post: float,
              ps_id: int) -> torch.Tensor:
    return synchronize(_ar._allreduce_async(t, False, name, op, pre, post,
                                            process_set_by_id(ps_id)))


@_op("grouped_allreduce", lambda ts, name, op, pre, post, ps_id: [_fake_same(t) for t in ts])
def grouped_allreduce(ts: _Tensors, name: Optional[str], op: int, pre: float, post: float,
                      ps_id: int) -> _Tensors:
    return synchronize(_ar._grouped_allreduce_async(ts, False, name, op, pre, post,
                                                    process_set_by_id(ps_id)))


@_op("allgather", lambda t, name, ps_id: _fake_gathered(t))
def allgather(t: torch.Tensor, name: Optional[str], ps_id: int) -> torch.Tensor:
    return synchronize(_ag.allgather_async(t, name, process_set_by_id(ps_id)))


@_op("grouped_allgather", lambda ts, name, ps_id: [_fake_gathered(t) for t in ts])
def grouped_allgather(ts: _Tensors, name: Optional[str], ps_id: int) -> _Tensors:
    return synchronize(_ag.grouped_allgather_async(ts, name, process_set_by_id(ps_id)))


@_op("broadcast", lambda t, root, name, ps_id: _fake_same(t))
def broadcast(t: torch.Tensor, root: int, name: Optional[str], ps_id: int) -> torch.Tensor:
    return synchronize(_ag.broadcast_async(t, root, name, process_set_by_id(ps_id)))


@_op("alltoall", lambda t, splits, name, ps_id: _fake_alltoall(t, splits, ps_id))
def alltoall(t: torch.Tensor, splits: Optional[torch.Tensor], name: Optional[str],
             ps_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    return synchronize(_a2a.alltoall_async(t, splits, name, process_set_by_id(ps_id)))


@_op("reducescatter", lambda t, name, op, pre, post, ps_id: _fake_scattered(t, ps_id))
def reducescatter(t: torch.Tensor, name: Optional[str], op: int, pre: float, post: float,
                  ps_id: int) -> torch.Tensor:
    return synchronize(_a2a.reducescatter_async(t, name, op, process_set_by_id(ps_id), pre, post))


@_op("grouped_reducescatter",
     lambda ts, name, op, pre, post, ps_id: [_fake_scattered(t, ps_id) for t in ts])
def grouped_reducescatter(ts: _Tensors, name: Optional[str], op: int, pre: float, post: float,
                          ps_id: int) -> _Tensors:
    return synchronize(_a2a.grouped_reducescatter_async(ts, name, op, process_set_by_id(ps_id),
                                                        pre, post))


@_op("allgather_backward", lambda g, dim0, ps_id: g.new_empty((dim0, *g.shape[1:])))
def allgather_backward(g: torch.Tensor, dim0: int, ps_id: int) -> torch.Tensor:
    return _ag.allgather_grads([g], [dim0], process_set_by_id(ps_id))[0]


@_op("grouped_allgather_backward",
     lambda gs, dims, ps_id: [g.new_empty((d, *g.shape[1:])) for g, d in zip(gs, dims)])
def grouped_allgather_backward(gs: _Tensors, dims: list[int], ps_id: int) -> _Tensors:
    return _ag.allgather_grads(gs, dims, process_set_by_id(ps_id))


# ---------------------------------------------------------------- start / wait


@_op("allreduce_start", _fake_handle)
def allreduce_start(t: torch.Tensor, name: Optional[str], op: int, pre: float, post: float,
                    ps_id: int) -> torch.Tensor:
    return STARTED.add(_ar._allreduce_async(t, False, name, op, pre, post,
                                            process_set_by_id(ps_id)))


@_op("grouped_allreduce_start", _fake_handle)
def grouped_allreduce_start(ts: _Tensors, name: Optional[str], op: int, pre: float, post: float,
                            ps_id: int) -> torch.Tensor:
    return STARTED.add(_ar._grouped_allreduce_async(ts, False, name, op, pre, post,
                                                    process_set_by_id(ps_id)))


@_op("allgather_start", _fake_handle)
def allgather_start(t: torch.Tensor, name: Optional[str], ps_id: int) -> torch.Tensor:
    return STARTED.add(_ag.allgather_async(t, name, process_set_by_id(ps_id)))


@_op("grouped_allgather_start", _fake_handle)
def grouped_allgather_start(ts: _Tensors, name: Optional[str], ps_id: int) -> torch.Tensor:
    return STARTED.add(_ag.grouped_allgather_async(ts, name, process_set_by_id(ps_id)))


@_op("broadcast_start", _fake_handle)
def broadcast_start(t: torch.Tensor, root: int, name: Optional[str], ps_id: int) -> torch.Tensor:
    return STARTED.add(_ag.broadcast_async(t, root, name, process_set_by_id(ps_id)))


@_op("alltoall_start", _fake_handle)
def alltoall_start(t: torch.Tensor, splits: Optional[torch.Tensor], name: Optional[str],
                   ps_id: int) -> torch.Tensor:
    return STARTED.add(_a2a.alltoall_async(t, splits, name, process_set_by_id(ps_id)))


@_op("reducescatter_start", _fake_handle)
def reducescatter_start(t: torch.Tensor, name: Optional[str], op: int, pre: float, post: float,
                        ps_id: int) -> torch.Tensor:
    return STARTED.add(_a2a.reducescatter_async(t, name, op, process_set_by_id(ps_id), pre, post))


@_op("grouped_reducescatter_start", _fake_handle)
def grouped_reducescatter_start(ts: _Tensors, name: Optional[str], op: int, pre: float,
                                post: float, ps_id: int) -> torch.Tensor:
    return STARTED.add(_a2a.grouped_reducescatter_async(ts, name, op, process_set_by_id(ps_id),
                                                        pre, post))


@_op("wait", lambda handle, inputs, kind, ps_id: _FAKE_WAIT[kind](inputs, ps_id))
def wait(handle: torch.Tensor, inputs: _Tensors, kind: str, ps_id: int) -> _Tensors:
    result = synchronize(STARTED.take(handle))
    return list(result) if isinstance(result, (list, tuple)) else [result]


@_op("poll", lambda handle: torch.empty((), dtype=torch.bool))
def poll(handle: torch.Tensor) -> torch.Tensor:
    return torch.tensor(STARTED.peek(handle).is_completed())


# ---------------------------------------------------------------- autograd
# The formulas of the eager autograd Functions (ops_*.py), written with the
# ops above so a compiled backward traces them too. Python values read here
# (rank, set size) are read when the backward is traced, as the eager
# Functions read them when backward runs; both are fixed for a job.


def _save_args(names):
    def setup_context(ctx, inputs, output):
        for attr, value in zip(names, inputs):
            if attr is not None:
                setattr(ctx, attr, value)
        ctx.output = output
    return setup_context


def _zeros_for_none(grads, like):
    return [g if g is not None else torch.zeros_like(t) for g, t in zip(grads, like)]


def _allreduce_grad(ctx, g):
    return allreduce(g, None, ctx.op, ctx.pre, ctx.post, ctx.ps_id), None, None, None, None, None


def _grouped_allreduce_grad(ctx, gs):
    gs = _zeros_for_none(gs, ctx.output)
    return grouped_allreduce(gs, None, ctx.op, ctx.pre, ctx.post, ctx.ps_id), None, None, None, \
        None, None


def _allgather_setup(ctx, inputs, output):
    ctx.dim0 = inputs[0].shape[0]
    ctx.ps_id = inputs[2]


def _allgather_grad(ctx, g):
    return allgather_backward(g, ctx.dim0, ctx.ps_id), None, None


def _grouped_allgather_setup(ctx, inputs, output):
    ctx.dims = [t.shape[0] for t in inputs[0]]
    ctx.ps_id = inputs[2]
    ctx.output = output


def _grouped_allgather_grad(ctx, gs):
    gs = _zeros_for_none(gs, ctx.output)
    return grouped_allgather_backward(gs, ctx.dims, ctx.ps_id), None, None


def _broadcast_grad(ctx, g):
    reduced = allreduce(g, None, HorovodBasics.Average, 1.0, 1.0, ctx.ps_id)
    if DEFAULT_RUNTIME.initialized_runtime().rank() != ctx.root:
        reduced = reduced * 0
    return reduced, None, None, None


def _alltoall_grad(ctx, g, g_received):
    received = ctx.output[1]
    return alltoall(g, received, None, ctx.ps_id)[0], None, None, None


def _reducescatter_grad(ctx, g):
    n = _set_shape(ctx.ps_id)[1]
    scale = _a2a._scatter_grad_scale(ctx.op, ctx.pre, ctx.post, n)
    return _a2a._scaled(allgather(g, None, ctx.ps_id), scale), None, None, None, None, None


def _grouped_reducescatter_grad(ctx, gs):
    gs = _zeros_for_none(gs, ctx.output)
    n = _set_shape(ctx.ps_id)[1]
    scale = _a2a._scatter_grad_scale(ctx.op, ctx.pre, ctx.post, n)
    grads = [_a2a._scaled(g, scale) for g in grouped_allgather(gs, None, ctx.ps_id)]
    return grads, None, None, None, None, None


_REDUCE_ARGS = (None, None, "op", "pre", "post", "ps_id")
allreduce.register_autograd(_allreduce_grad, setup_context=_save_args(_REDUCE_ARGS))
grouped_allreduce.register_autograd(_grouped_allreduce_grad, setup_context=_save_args(_REDUCE_ARGS))
allgather.register_autograd(_allgather_grad, setup_context=_allgather_setup)
grouped_allgather.register_autograd(_grouped_allgather_grad, setup_context=_grouped_allgather_setup)
broadcast.register_autograd(_broadcast_grad,
                            setup_context=_save_args((None, "root", None, "ps_id")))
alltoall.register_autograd(_alltoall_grad, setup_context=_save_args((None, None, None, "ps_id")))
reducescatter.register_autograd(_reducescatter_grad, setup_context=_save_args(_REDUCE_ARGS))
grouped_reducescatter.register_autograd(_grouped_reducescatter_grad,
                                        setup_context=_save_args(_REDUCE_ARGS))
