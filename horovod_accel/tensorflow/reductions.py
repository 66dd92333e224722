"""The public reductions of horovod.tensorflow (upstream defines them in
`horovod/tensorflow/__init__.py`): allreduce, grouped_allreduce,
reducescatter and grouped_reducescatter with compression, the deprecated
`average` flag, and tf.IndexedSlices.

They build on the op layer (mpi_ops.py: `_allreduce`, `_grouped_allreduce`,
`_reducescatter`, `_grouped_reducescatter`, `allgather`) and work wherever
those do: eager, inside tf.function and in TF1 graphs. Every call is
collective over `process_set`; in eager mode it blocks until the result is
there, in a graph it adds ops that run when the graph does.

Sparse gradients: a tf.IndexedSlices is reduced by two allgathers (its values
and its indices), so the result holds every rank's rows (duplicate indices
are summed when applied); Average divides the values by the set size. Only
Sum and Average are defined for them, and no pre/postscale.
"""
import contextlib

import tensorflow as tf

from horovod_accel.common.elastic import in_elastic_job
from horovod_accel.common.util import get_average_backwards_compatibility_fun
from horovod_accel.tensorflow import mpi_ops as _ops
from horovod_accel.tensorflow.compression import Compression
from horovod_accel.tensorflow.mpi_ops import Adasum, Average, Sum, global_process_set

_resolve_op = get_average_backwards_compatibility_fun(_ops)


def _device(device):
    """tf.device(device) for a non-empty device string, else a no-op scope."""
    return tf.device(device) if device else contextlib.nullcontext()


def _sparse_allreduce(tensor, op, prescale_factor, postscale_factor, name, process_set,
                      ignore_name_scope):
    if op == Adasum:
        raise NotImplementedError("The Adasum reduction does not support sparse tensors "
                                  "(tf.IndexedSlices); pass sparse_as_dense=True to reduce them "
                                  "densely.")
    if op not in (Average, Sum):
        raise NotImplementedError(f"Only Sum and Average reduce sparse tensors (tf.IndexedSlices), "
                                  f"got op={op}; pass sparse_as_dense=True for other ops.")
    if prescale_factor != 1.0 or postscale_factor != 1.0:
        raise NotImplementedError("prescale_factor and postscale_factor are not supported for "
                                  "sparse tensors (tf.IndexedSlices); scale the values yourself or "
                                  "pass sparse_as_dense=True.")
    values_name = None if name is None else f"{name}.values"
    indices_name = None if name is None else f"{name}.indices"
    values = _ops.allgather(tensor.values, name=values_name, process_set=process_set,
                            ignore_name_scope=ignore_name_scope)
    indices = _ops.allgather(tensor.indices, name=indices_name, process_set=process_set,
                             ignore_name_scope=ignore_name_scope)
    if op == Average:
        # In an elastic job a traced function outlives a resize: the size must
        # be an op evaluated per call, not a constant baked in at tracing.
        size = (_ops.size_op(process_set_id=process_set.process_set_id) if in_elastic_job()
                else process_set.size())
        values = values / tf.cast(size, values.dtype)
    return tf.IndexedSlices(values, indices, dense_shape=tensor.dense_shape)


def allreduce(tensor, average=None, device_dense='', device_sparse='',
              compression=Compression.none, op=None, prescale_factor=1.0, postscale_factor=1.0,
              name=None, process_set=global_process_set, ignore_name_scope=False):
    """Reduces `tensor` (a tf.Tensor, tf.Variable or tf.IndexedSlices) over
    the ranks of `process_set` and returns the result (same shape; dtype of
    the input, whatever `compression` sent).

    op: Average (default), Sum, Min, Max, Product or Adasum; `average` is the
    deprecated flag (True -> Average, False -> Sum; ValueError with op).
    prescale_factor / postscale_factor multiply before / after the reduction.
    name: the core tensor name stem (must match across ranks); default derived
    by the op layer. Raises tf.errors.* (FailedPreconditionError for a
    cross-rank mismatch) when the collective fails.
    """
    op = _resolve_op(op, average)
    if isinstance(tensor, tf.IndexedSlices):
        with _device(device_sparse):
            return _sparse_allreduce(tensor, op, prescale_factor, postscale_factor, name,
                                     process_set, ignore_name_scope)
    with _device(device_dense):
        compressed, ctx = compression.compress(tensor)
        reduced = _ops._allreduce(compressed, name=name, op=op, prescale_factor=prescale_factor,
                                  postscale_factor=postscale_factor,
                                  ignore_name_scope=ignore_name_scope, process_set=process_set)
        return compression.decompress(reduced, ctx)


def grouped_allreduce(tensors, average=None, device_dense='', device_sparse='',
                      compression=Compression.none, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=global_process_set,
                      ignore_name_scope=False, name=None):
    """allreduce of a list of tensors; the dense ones form one group that the
    core negotiates and fuses atomically, tf.IndexedSlices are reduced one by
    one (allgathers). Returns the list of results in input order."""
    op = _resolve_op(op, average)
    tensors = list(tensors)
    if not tensors:
        return []
    dense = [i for i, t in enumerate(tensors) if not isinstance(t, tf.IndexedSlices)]
    out = [None] * len(tensors)
    for i, t in enumerate(tensors):
        if isinstance(t, tf.IndexedSlices):
            with _device(device_sparse):
                out[i] = _sparse_allreduce(t, op, prescale_factor, postscale_factor,
                                           None if name is None else f"{name}.sparse{i}",
                                           process_set, ignore_name_scope)
    if dense:
        with _device(device_dense):
            compressed, ctxs = zip(*[compression.compress(tensors[i]) for i in dense])
            reduced = _ops._grouped_allreduce(
                list(compressed), name=name, op=op, prescale_factor=prescale_factor,
                postscale_factor=postscale_factor, ignore_name_scope=ignore_name_scope,
                process_set=process_set)
            for i, r, ctx in zip(dense, reduced, ctxs):
                out[i] = compression.decompress(r, ctx)
    return out


def _check_scatter_op(op):
    if op not in (Average, Sum):
        raise NotImplementedError(f"reducescatter supports op=Average or op=Sum, got op={op}.")


def reducescatter(tensor, device_dense='', compression=Compression.none, op=Average, name=None,
                  process_set=global_process_set, ignore_name_scope=False, prescale_factor=1.0,
                  postscale_factor=1.0):
    """Reduces `tensor` over the set and returns this rank's slice of the
    result along dimension 0 (ranks below dim0 % size get one extra row)."""
    _check_scatter_op(op)
    with _device(device_dense):
        compressed, ctx = compression.compress(tensor)
        reduced = _ops._reducescatter(compressed, name=name, op=op,
                                      ignore_name_scope=ignore_name_scope,
                                      process_set=process_set, prescale_factor=prescale_factor,
                                      postscale_factor=postscale_factor)
        return compression.decompress(reduced, ctx)


def grouped_reducescatter(tensors, device_dense='', compression=Compression.none, op=Average,
                          name=None, process_set=global_process_set, ignore_name_scope=False,
                          prescale_factor=1.0, postscale_factor=1.0):
    """reducescatter of a list of tensors as one atomic group."""
    _check_scatter_op(op)
    tensors = list(tensors)
    if not tensors:
        return []
    with _device(device_dense):
        compressed, ctxs = zip(*[compression.compress(t) for t in tensors])
        reduced = _ops._grouped_reducescatter(
            list(compressed), name=name, op=op, ignore_name_scope=ignore_name_scope,
            process_set=process_set, prescale_factor=prescale_factor,
            postscale_factor=postscale_factor)
        return [compression.decompress(r, c) for r, c in zip(reduced, ctxs)]
