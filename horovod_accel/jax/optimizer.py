"""Data-parallel optax training: `allreduce_gradients` and `DistributedOptimizer`.

`allreduce_gradients(grads, ...)` reduces a gradient pytree across the ranks
of a process set through the shared GradientReducer
(horovod_accel/common/gradient_reducer.py): the leaves, in
`jax.tree_util` flattening order, are packed into buckets
(horovod_accel/common/buckets.py: one dtype per bucket, at most
buckets.DEFAULT_BUCKET_BYTES each); a bucket of one leaf is one allreduce, a
larger one a grouped allreduce, named '<name>.<index of its first leaf>'.
Names therefore depend only on the tree's structure, shapes and dtypes, so
they are identical on every rank that reduces the same tree. Compression
casts floating leaves before the reduction and back after it.

The reduction goes through the public collectives of horovod.jax (mpi_ops):
eagerly they block and return jax arrays; under jax.jit / jax.grad (the
leaves are tracers) they bind the adapter's XLA custom calls, which run in
program order on every rank (see docs/jax.md). The same code serves both.

`DistributedOptimizer(optimizer, ...)` wraps an optax GradientTransformation:
its `update(grads, state, params)` reduces `grads` as above, then applies
the wrapped transformation. With backward_passes_per_step=k > 1 the state
is a DistributedOptimizerState that accumulates k calls' gradients locally;
only every k-th call communicates and updates (the other calls return zero
updates and leave the wrapped state alone). The decision is taken from the
state's counter: `lax.cond` under tracing, a Python branch eagerly, so the
step works inside and outside jax.jit, and every rank takes the same branch
because every rank counts the same calls.
"""
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from horovod_accel.common import optimizer_args as _args
from horovod_accel.common.basics import HorovodBasics
from horovod_accel.common.gradient_reducer import GradientReducer, ReduceOps
from horovod_accel.common.process_sets import global_process_set
from horovod_accel.jax.compression import Compression

Average = HorovodBasics.Average
Adasum = HorovodBasics.Adasum

DEFAULT_NAME = "DistributedOptimizer"


def _mpi_ops():
    # Imported on first use: mpi_ops imports the package, which imports this module.
    from horovod_accel.jax import mpi_ops  # noqa: PLC0415
    return mpi_ops


class _JaxReduceOps(ReduceOps):
    """GradientReducer's view of JAX: dense arrays (or tracers) only."""

    variable_type = "int (a number of groups); lists of arrays are not supported"

    @staticmethod
    def is_variable(x):
        return False

    @staticmethod
    def is_sparse(grad):
        return False

    @staticmethod
    def to_dense(grad):
        return grad

    @staticmethod
    def describe(grad):
        dtype = np.dtype(grad.dtype)
        return int(np.prod(grad.shape, dtype=np.int64)) * dtype.itemsize, dtype

    @staticmethod
    def divide(grad, n):
        return grad / n

    @staticmethod
    def allreduce(tensor, *, compression, op, prescale_factor, postscale_factor, process_set,
                  name, device_dense=None):
        wire, ctx = compression.compress(tensor)
        out = _mpi_ops().allreduce(wire, op=op, prescale_factor=prescale_factor,
                                   postscale_factor=postscale_factor, name=name,
                                   process_set=process_set)
        return compression.decompress(out, ctx)

    @staticmethod
    def grouped_allreduce(tensors, *, compression, op, prescale_factor, postscale_factor,
                          process_set, name, device_dense=None):
        wires, ctxs = zip(*(compression.compress(t) for t in tensors))
        outs = _mpi_ops().grouped_allreduce(list(wires), op=op, prescale_factor=prescale_factor,
                                            postscale_factor=postscale_factor, name=name,
                                            process_set=process_set)
        return [compression.decompress(o, c) for o, c in zip(outs, ctxs)]


def _check_groups(groups):
    if groups is None or (isinstance(groups, int) and not isinstance(groups, bool)
                          and groups > 0):
        return
    raise ValueError(f"groups must be None (automatic buckets) or a positive int (that many "
                     f"groups of leaves), got {groups!r}: horovod.jax names gradients by their "
                     f"position in the pytree, not by array identity.")


def _check_compression(compression):
    if not (hasattr(compression, "compress") and hasattr(compression, "decompress")):
        raise TypeError(f"compression must be a Compressor such as hvd.Compression.none, "
                        f".fp16 or .bf16, got {compression!r}")


def _reducer(compression, op, gradient_predivide_factor, groups, process_set, name):
    """A GradientReducer for one call site; raises ValueError/TypeError for
    invalid arguments (upstream's messages where upstream has them)."""
    _check_compression(compression)
    _check_groups(groups)
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a str or None, got {type(name).__name__}")
    return GradientReducer(_JaxReduceOps, name or DEFAULT_NAME, None, None, compression, False,
                           op, gradient_predivide_factor, groups, process_set)


def _reduce_tree(reducer, grads):
    """reducer.reduce over the leaves of `grads`; float0 leaves (gradients of
    integer inputs) are not reduced."""
    leaves, treedef = jax.tree_util.tree_flatten(grads)
    arrays = [leaf if hasattr(leaf, "dtype") and hasattr(leaf, "shape") else jnp.asarray(leaf)
              for leaf in leaves]
    inputs = [None if a.dtype == jax.dtypes.float0 else a for a in arrays]
    out = reducer.reduce(inputs, inputs)
    return treedef.unflatten([a if o is None else o for a, o in zip(arrays, out)])


def allreduce_gradients(grads, compression=Compression.none, op=Average,
                        gradient_predivide_factor=1.0, process_set=global_process_set, name=None,
                        groups=None):
    """Returns the pytree `grads` reduced across the ranks of `process_set`
    (module docstring); eagerly or under jax.jit alike.

    op: hvd.Average (default), hvd.Sum, hvd.Adasum, hvd.Min, hvd.Max, hvd.Product.
    gradient_predivide_factor f (Average only): leaves are scaled by 1/f
        before the sum and by f/size after it.
    name: prefix of the collectives' names (default 'DistributedOptimizer');
        give each concurrent call site its own.
    groups: None (automatic buckets) or n (the leaves split into n groups).
    On a rank outside `process_set`, or at size 1 outside an elastic job,
    `grads` comes back unreduced."""
    reducer = _reducer(compression, op, gradient_predivide_factor, groups, process_set, name)
    return _reduce_tree(reducer, grads)


class DistributedOptimizerState(NamedTuple):
    """State of a DistributedOptimizer with backward_passes_per_step > 1.

    mini_step: int32 scalar, calls since the last communicating one (0..k-1).
    acc_grads: the gradients summed over those calls (a pytree like params).
    inner_state: the wrapped transformation's state."""
    mini_step: Any
    acc_grads: Any
    inner_state: Any


def _is_traced(*trees):
    # Imported on first use, as mpi_ops does: importing horovod.jax stays cheap.
    from horovod_accel.jax import xla_ops  # noqa: PLC0415
    return xla_ops.is_traced(*trees)


def DistributedOptimizer(optimizer, compression=Compression.none, backward_passes_per_step=1,
                         op=Average, gradient_predivide_factor=1.0,
                         process_set=global_process_set, name=None, groups=None,
                         average_aggregated_gradients=False):
    """Wraps the optax GradientTransformation `optimizer` so gradients are
    reduced across the ranks of `process_set` before it sees them; returns an
    optax.GradientTransformationExtraArgs (module docstring).

    compression, op, gradient_predivide_factor, name, groups: as for
        allreduce_gradients.
    backward_passes_per_step k: gradients of k update() calls are summed
        locally and reduced once, on every k-th call (the others return zero
        updates). average_aggregated_gradients divides the sum by k before
        the reduction (as optax.MultiSteps does); by default the sum is
        reduced, as Horovod's other DistributedOptimizers do.
    With k == 1 the state is the wrapped transformation's own state."""
    try:
        import optax  # noqa: PLC0415 -- only this wrapper needs optax
    except ImportError as e:
        raise ImportError("hvd.DistributedOptimizer wraps an optax GradientTransformation; "
                          "install optax (pip install optax).") from e
    if not (callable(getattr(optimizer, "init", None))
            and callable(getattr(optimizer, "update", None))):
        raise TypeError(f"DistributedOptimizer needs an optax GradientTransformation (with init "
                        f"and update), got {type(optimizer).__name__}: wrap e.g. "
                        f"optax.adam(1e-3).")
    _args.check_backward_passes(backward_passes_per_step)
    if op == Adasum and average_aggregated_gradients:
        raise ValueError("Adasum does not support average_aggregated_gradients == True")
    reducer = _reducer(compression, op, gradient_predivide_factor, groups, process_set, name)
    inner = optax.with_extra_args_support(optimizer)
    passes = backward_passes_per_step

    if passes == 1:
        def update(updates, state, params=None, **extra_args):
            return inner.update(_reduce_tree(reducer, updates), state, params, **extra_args)

        return optax.GradientTransformationExtraArgs(inner.init, update)

    def init(params):
        return DistributedOptimizerState(
            mini_step=jnp.zeros([], jnp.int32),
            acc_grads=jax.tree_util.tree_map(jnp.zeros_like, params),
            inner_state=inner.init(params))

    def update(updates, state, params=None, **extra_args):
        if not isinstance(state, DistributedOptimizerState):
            raise TypeError(f"DistributedOptimizer(backward_passes_per_step={passes}).update() "
                            f"needs the state its init() returned, got "
                            f"{type(state).__name__}.")
        acc = jax.tree_util.tree_map(lambda a, g: (a + g).astype(a.dtype), state.acc_grads,
                                     updates)

        def communicate(acc, inner_state, params):
            grads = acc
            if average_aggregated_gradients:
                grads = jax.tree_util.tree_map(lambda a: a / passes, acc)
            new_updates, inner_state = inner.update(_reduce_tree(reducer, grads), inner_state,
                                                    params, **extra_args)
            return new_updates, DistributedOptimizerState(
                jnp.zeros([], jnp.int32), jax.tree_util.tree_map(jnp.zeros_like, acc),
                inner_state)

        def accumulate(acc, inner_state, params):
            shapes = jax.eval_shape(lambda a, s, p: inner.update(a, s, p, **extra_args)[0],
                                    acc, inner_state, params)
            zeros = jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)
            return zeros, DistributedOptimizerState(state.mini_step + 1, acc, inner_state)

        boundary = state.mini_step >= passes - 1
        operands = (acc, state.inner_state, params)
        if _is_traced(updates, state, params):
            return jax.lax.cond(boundary, communicate, accumulate, *operands)
        return (communicate if bool(boundary) else accumulate)(*operands)

    return optax.GradientTransformationExtraArgs(init, update)


__all__ = ["DistributedOptimizer", "DistributedOptimizerState", "allreduce_gradients"]
