"""Horovod's collectives on traced JAX values (inside jax.jit, jax.grad,
lax.scan, ...): each is one XLA custom call (xla_lowering.py, NOTE [Ordered
collectives] and NOTE [Names inside a traced function]), with gradients
(jax.custom_vjp) by the torch adapter's rules:
- allreduce (Sum, Average): the output gradient allreduced with the same op
  and scale factors;
- allgather: the output gradient averaged over the set, then this rank's rows;
- broadcast: the output gradient averaged over the set on the root rank, zero
  elsewhere;
- alltoall: the output gradient sent back by alltoall;
- reducescatter (Sum, Average): the output gradients allgathered, scaled by
  the op's derivative (pre x post scale, 1/set size for Average).
Min, Max, Product and Adasum have no gradient here: differentiating through
them raises NotImplementedError naming the op.

These functions take already-checked arguments (horovod_accel/jax/mpi_ops.py
checks the user's); shapes inside jit are static, so allgather needs the same
dim 0 on every rank and alltoall an equal split (the handler reports a rank
that breaks this; call the op outside jit for ragged shapes).

The topology a trace depends on (set sizes and ranks, for output shapes and
the broadcast gradient) is fixed at trace time; a new job (init(), shutdown(),
an elastic reset) therefore clears JAX's caches (`forget_traces`).
"""
import functools
import sys

import jax

from horovod_accel.common.basic_names import REDUCE_OP_NAMES
from horovod_accel.common.basics import HorovodBasics
from horovod_accel.common.default_runtime import DEFAULT_RUNTIME
from horovod_accel.jax import xla_lowering as _low
from horovod_accel.jax.xla_link import LINK

_DIFFERENTIABLE_REDUCTIONS = (HorovodBasics.Sum, HorovodBasics.Average)


def is_traced(*trees):
    """True while JAX traces (inside jit, grad, vmap, ...): any leaf of the
    pytrees is a tracer, or JAX is tracing at all. The second covers a
    constant array inside a jitted function: run eagerly, its collective
    would run once, at trace time, and be frozen into the compiled program;
    as a primitive it runs each time the program does."""
    if not _low.is_top_level():
        return True
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(trees))


def forget_traces():
    """Reset listener: traces of the previous job hold its topology (at exit
    there is nothing left to run again)."""
    if not sys.is_finalizing():
        jax.clear_caches()


DEFAULT_RUNTIME.add_reset_listener(forget_traces)


def _topology(process_set_id):
    """(set size, this rank's set rank, global rank) of an initialized job."""
    rt = DEFAULT_RUNTIME.initialized_runtime()
    return rt.process_set_size(process_set_id), rt.process_set_rank(process_set_id), rt.rank()


def _bind(xs, kind, name, grouped, process_set_id, **params):
    LINK.ensure_ready()
    set_size, set_rank, _ = _topology(process_set_id)
    return _low.bind(list(xs), kind=kind, name=None if name is None else str(name),
                     grouped=grouped, process_set_id=process_set_id, set_size=set_size,
                     set_rank=set_rank, **params)


def _no_gradient(op_name, op):
    raise NotImplementedError(
        f"The gradient of {op_name} is only defined for op=Sum or op=Average (got "
        f"op={REDUCE_OP_NAMES.get(op, op)}); wrap its input in jax.lax.stop_gradient to skip it.")


# ---------------------------------------------------------------- allreduce


@functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2, 3, 4, 5, 6))
def _grouped_allreduce(xs, op, prescale, postscale, name, process_set_id, grouped):
    return _bind(xs, _low.ALLREDUCE, name, grouped, process_set_id, reduce_op=op,
                 prescale=prescale, postscale=postscale)


def _grouped_allreduce_fwd(xs, op, prescale, postscale, name, process_set_id, grouped):
    return _grouped_allreduce(xs, op, prescale, postscale, name, process_set_id, grouped), None


def _grouped_allreduce_bwd(op, prescale, postscale, name, process_set_id, grouped, _, grads):
    if op not in _DIFFERENTIABLE_REDUCTIONS:
        _no_gradient("allreduce", op)
    grad_name = None if name is None else f"{name}.grad"
    return (_grouped_allreduce(list(grads), op, prescale, postscale, grad_name, process_set_id,
                               grouped),)


_grouped_allreduce.defvjp(_grouped_allreduce_fwd, _grouped_allreduce_bwd)


def allreduce(x, *, op, prescale_factor=1.0, postscale_factor=1.0, name=None, process_set_id=0):
    return _grouped_allreduce([x], op, float(prescale_factor), float(postscale_factor), name,
                              process_set_id, False)[0]


def grouped_allreduce(xs, *, op, prescale_factor=1.0, postscale_factor=1.0, name=None,
                      process_set_id=0):
    xs = list(xs)
    if not xs:
        return []
    return list(_grouped_allreduce(xs, op, float(prescale_factor), float(postscale_factor), name,
                                   process_set_id, True))


# ---------------------------------------------------------------- allgather


@functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2, 3))
def _grouped_allgather(xs, name, process_set_id, grouped):
    return _bind(xs, _low.ALLGATHER, name, grouped, process_set_id)


def _grouped_allgather_fwd(xs, name, process_set_id, grouped):
    return _grouped_allgather(xs, name, process_set_id, grouped), [x.shape[0] for x in xs]


def _grouped_allgather_bwd(name, process_set_id, grouped, rows, grads):
    # Every rank gathered the same number of rows inside jit, so this rank's
    # rows of the (averaged) output gradient start at set_rank * rows.
    _, set_rank, _ = _topology(process_set_id)
    grad_name = None if name is None else f"{name}.grad"
    reduced = _grouped_allreduce(list(grads), HorovodBasics.Average, 1.0, 1.0, grad_name,
                                 process_set_id, grouped)
    return ([jax.lax.slice_in_dim(g, set_rank * r, (set_rank + 1) * r, axis=0)
             for g, r in zip(reduced, rows)],)


_grouped_allgather.defvjp(_grouped_allgather_fwd, _grouped_allgather_bwd)


def allgather(x, *, name=None, process_set_id=0):
    return _grouped_allgather([x], name, process_set_id, False)[0]


def grouped_allgather(xs, *, name=None, process_set_id=0):
    xs = list(xs)
    return list(_grouped_allgather(xs, name, process_set_id, True)) if xs else []


# ---------------------------------------------------------------- broadcast


@functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2, 3))
def _broadcast(x, root_rank, name, process_set_id):
    return _bind([x], _low.BROADCAST, name, False, process_set_id, root_rank=root_rank)[0]


def _broadcast_fwd(x, root_rank, name, process_set_id):
    return _broadcast(x, root_rank, name, process_set_id), None


def _broadcast_bwd(root_rank, name, process_set_id, _, grad):
    grad_name = None if name is None else f"{name}.grad"
    reduced = _grouped_allreduce([grad], HorovodBasics.Average, 1.0, 1.0, grad_name,
                                 process_set_id, False)[0]
    if _topology(process_set_id)[2] != root_rank:
        reduced = reduced * 0
    return (reduced,)


_broadcast.defvjp(_broadcast_fwd, _broadcast_bwd)


def broadcast(x, *, root_rank, name=None, process_set_id=0):
    return _broadcast(x, int(root_rank), name, process_set_id)


# ---------------------------------------------------------------- alltoall


@functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def _alltoall(x, name, process_set_id):
    return _bind([x], _low.ALLTOALL, name, False, process_set_id)[0]


def _alltoall_fwd(x, name, process_set_id):
    return _alltoall(x, name, process_set_id), None


def _alltoall_bwd(name, process_set_id, _, grad):
    grad_name = None if name is None else f"{name}.grad"
    return (_alltoall(grad, grad_name, process_set_id),)


_alltoall.defvjp(_alltoall_fwd, _alltoall_bwd)


def alltoall(x, *, name=None, process_set_id=0):
    """Equal split: dim 0 must be divisible by the set size (checked here)."""
    set_size = _topology(process_set_id)[0]
    if x.ndim == 0 or x.shape[0] % set_size:
        raise ValueError(f"alltoall inside jax.jit sends equal splits, so dim 0 must be divisible "
                         f"by the process set's size {set_size}; got shape {tuple(x.shape)}. Call "
                         f"it outside jit to pass `splits`.")
    return _alltoall(x, name, process_set_id)


# ---------------------------------------------------------------- reducescatter


@functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2, 3, 4, 5, 6))
def _grouped_reducescatter(xs, op, prescale, postscale, name, process_set_id, grouped):
    return _bind(xs, _low.REDUCESCATTER, name, grouped, process_set_id, reduce_op=op,
                 prescale=prescale, postscale=postscale)


def _grouped_reducescatter_fwd(xs, op, prescale, postscale, name, process_set_id, grouped):
    out = _grouped_reducescatter(xs, op, prescale, postscale, name, process_set_id, grouped)
    return out, [x.shape[0] for x in xs]


def _grouped_reducescatter_bwd(op, prescale, postscale, name, process_set_id, grouped, rows,
                               grads):
    if op not in _DIFFERENTIABLE_REDUCTIONS:
        _no_gradient("reducescatter", op)
    set_size = _topology(process_set_id)[0]
    if any(r % set_size for r in rows):
        # Ranks then hold different row counts, and the allgather of the
        # gradient inside jit needs equal ones.
        raise NotImplementedError(
            f"The gradient of reducescatter inside a traced function needs dim 0 divisible by "
            f"the process set's size {set_size} (got dim 0 of {rows}); pad the input, or take "
            f"the gradient outside jit.")
    scale = prescale * postscale / (set_size if op == HorovodBasics.Average else 1)
    grad_name = None if name is None else f"{name}.grad"
    gathered = _grouped_allgather(list(grads), grad_name, process_set_id, grouped)
    return ([g if scale == 1.0 else g * scale for g in gathered],)


_grouped_reducescatter.defvjp(_grouped_reducescatter_fwd, _grouped_reducescatter_bwd)


def reducescatter(x, *, op, prescale_factor=1.0, postscale_factor=1.0, name=None,
                  process_set_id=0):
    return _grouped_reducescatter([x], op, float(prescale_factor), float(postscale_factor), name,
                                  process_set_id, False)[0]


def grouped_reducescatter(xs, *, op, prescale_factor=1.0, postscale_factor=1.0, name=None,
                          process_set_id=0):
    xs = list(xs)
    if not xs:
        return []
    return list(_grouped_reducescatter(xs, op, float(prescale_factor), float(postscale_factor),
                                       name, process_set_id, True))
