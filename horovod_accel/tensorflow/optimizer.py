"""DistributedOptimizer for TF1 optimizers (tf.compat.v1.train.*), upstream
`horovod.tensorflow.DistributedOptimizer`; Keras optimizers are handed to
horovod_accel.tensorflow.keras.DistributedOptimizer, as upstream does.

The wrapper is itself a tf.compat.v1.train.Optimizer: `compute_gradients()`
runs the wrapped optimizer's and reduces the gradients across `process_set`
(optimizer_reduce.py), so `minimize()` and the usual
compute/apply split both train data-parallel. `apply_gradients()`, slots and
variables are the wrapped optimizer's. With backward_passes_per_step > 1
(graph mode only, like upstream) gradients are aggregated locally and applied
every that many steps (optimizer_aggregation.py); `global_step` still
advances every step.
"""
import warnings

import tensorflow as tf

from horovod_accel.common import buckets as _buckets
from horovod_accel.common import optimizer_args as _args
from horovod_accel.common import settings
from horovod_accel.tensorflow.compression import Compression
from horovod_accel.tensorflow.mpi_ops import Adasum, Average, global_process_set
from horovod_accel.tensorflow.optimizer_aggregation import LocalAggregator
from horovod_accel.tensorflow.optimizer_reduce import GradientReducer

_LegacyOptimizer = tf.compat.v1.train.Optimizer


def _local_variable(shape, dtype, name):
    """A zero-initialised TF1 local variable (initialised by
    local_variables_initializer / MonitoredTrainingSession's scaffold)."""
    with tf.init_scope():
        return tf.compat.v1.Variable(tf.zeros(shape, dtype), trainable=False, name=name,
                                     collections=[tf.compat.v1.GraphKeys.LOCAL_VARIABLES],
                                     use_resource=True)


class _DistributedOptimizer(_LegacyOptimizer):
    """A tf.compat.v1.train.Optimizer that reduces gradients before applying them."""

    def __init__(self, optimizer, name, use_locking, reducer, backward_passes_per_step,
                 average_aggregated_gradients):
        super().__init__(name=name, use_locking=use_locking)
        self._optimizer = optimizer
        self._reducer = reducer
        self.process_set = reducer.process_set
        self._aggregator = None
        if backward_passes_per_step > 1:
            if tf.executing_eagerly():
                raise ValueError("backward_passes_per_step > 1 is not supported by the TF1 "
                                 "DistributedOptimizer in eager mode (as upstream); build a TF1 "
                                 "graph (tf.compat.v1.disable_eager_execution()) or use a Keras "
                                 "optimizer with horovod.tensorflow.keras.DistributedOptimizer.")
            self._aggregator = LocalAggregator(backward_passes_per_step,
                                               average_aggregated_gradients, reducer,
                                               _local_variable)

    def register_local_var(self, var):
        """Gradients of `var` are not reduced (worker-local variable)."""
        self._reducer.register_local(var)

    def compute_gradients(self, *args, **kwargs):
        """The wrapped optimizer's (gradient, variable) pairs with every
        gradient reduced across the process set."""
        gradients = self._optimizer.compute_gradients(*args, **kwargs)
        if not gradients:
            return gradients
        grads, variables = zip(*gradients)
        if self._aggregator is not None:
            reduced = self._aggregator.compute(list(grads), list(variables))
        else:
            reduced = self._reducer.reduce(grads, variables)
        return list(zip(reduced, variables))

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """The wrapped optimizer's apply_gradients (every backward_passes_per_step-th step)."""
        grads_and_vars = list(grads_and_vars)

        def apply():
            return self._optimizer.apply_gradients(grads_and_vars, global_step=global_step,
                                                   name=name)
        if self._aggregator is None:
            return apply()
        skip = None if global_step is None else (lambda: global_step.assign_add(1))
        return self._aggregator.apply(apply, skip)

    def get_slot(self, *args, **kwargs):
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._optimizer.get_slot_names(*args, **kwargs)

    def variables(self, *args, **kwargs):
        return self._optimizer.variables(*args, **kwargs)


def _is_keras_optimizer(optimizer):
    try:
        import keras  # noqa: PLC0415 -- only to recognise Keras optimizers
    except ImportError:
        return False
    return isinstance(optimizer, keras.optimizers.Optimizer)


def DistributedOptimizer(optimizer, name=None, use_locking=False, device_dense='',
                         device_sparse='', compression=Compression.none, sparse_as_dense=False,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         average_aggregated_gradients=False, num_groups=0, groups=None,
                         process_set=global_process_set, scale_local_gradients=True):
    """Wraps a tf.compat.v1.train optimizer so gradients are reduced across
    the ranks of `process_set` (upstream signature and semantics); a Keras
    optimizer returns horovod.tensorflow.keras.DistributedOptimizer(...).

    name: op name prefix (default 'Distributed<OptimizerClass>').
    compression: Compression.none / .fp16 / .bf16 for the wire format.
    sparse_as_dense: reduce tf.IndexedSlices densely instead of by allgather.
    backward_passes_per_step, average_aggregated_gradients: local
        aggregation (graph mode), see optimizer_aggregation.py.
    op: Average (default), Sum, Min, Max, Product; Adasum is not supported
        by the TF1 wrapper here (NotImplementedError).
    gradient_predivide_factor: with Average, scale by 1/f before and f/size
        after the sum.
    groups / num_groups: explicit grouping (common/buckets.py).
    scale_local_gradients: divide gradients of register_local_var() variables
        by the set size.
    """
    _args.check_backward_passes(backward_passes_per_step)
    if op == Adasum and average_aggregated_gradients:
        raise ValueError("Adasum does not support average_aggregated_gradients == True")
    groups = _buckets.resolve_groups(num_groups, groups)
    if _is_keras_optimizer(optimizer):
        if op == Adasum:
            raise ValueError("op == Adasum is not supported yet with Keras")
        from horovod_accel.tensorflow import keras as hvd_keras  # noqa: PLC0415 (cycle)
        return hvd_keras.DistributedOptimizer(
            optimizer, name=name, device_dense=device_dense, device_sparse=device_sparse,
            compression=compression, sparse_as_dense=sparse_as_dense,
            gradient_predivide_factor=gradient_predivide_factor, op=op,
            backward_passes_per_step=backward_passes_per_step,
            average_aggregated_gradients=average_aggregated_gradients, groups=groups,
            process_set=process_set, scale_local_gradients=scale_local_gradients)
    if not isinstance(optimizer, _LegacyOptimizer):
        raise ValueError(f"Provided optimizer doesn't inherit from either legacy TensorFlow "
                         f"(tf.compat.v1.train.Optimizer) or Keras optimizer: {optimizer!r}")
    if isinstance(optimizer, _DistributedOptimizer):
        raise ValueError("optimizer is already a DistributedOptimizer; wrap the plain optimizer "
                         "once.")
    if op == Adasum:
        raise NotImplementedError("op=hvd.Adasum is not supported by horovod_accel's TF1 "
                                  "DistributedOptimizer yet; use op=hvd.Average, or the PyTorch "
                                  "adapter's Adasum optimizer.")
    if name is None:
        name = f"Distributed{type(optimizer).__name__}"
    reducer = GradientReducer(name, device_dense, device_sparse, compression, sparse_as_dense,
                              op, gradient_predivide_factor, groups, process_set,
                              scale_local_gradients)
    if settings.read("HOROVOD_ELASTIC"):
        warnings.warn("HOROVOD_ELASTIC is set but horovod_accel has no elastic TensorFlow "
                      "support; the optimizer reduces over the job's fixed size.")
    return _DistributedOptimizer(optimizer, name, use_locking, reducer,
                                 backward_passes_per_step, average_aggregated_gradients)
