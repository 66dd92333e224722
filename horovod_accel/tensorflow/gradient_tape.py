"""DistributedGradientTape and PartialDistributedGradientTape (upstream
`horovod.tensorflow`): a tf.GradientTape whose `gradient()` returns gradients
reduced across `process_set` (optimizer_reduce.py).

`DistributedGradientTape(tape)` returns an instance of a dynamic subclass of
`type(tape)` that shares the tape's recording state, so it can wrap a tape
after its `with` block (the usual upstream pattern) or before it. Works in
eager mode and inside tf.function.
"""
import tensorflow as tf

from horovod_accel.common import buckets as _buckets
from horovod_accel.tensorflow.compression import Compression
from horovod_accel.tensorflow.mpi_ops import Average, global_process_set
from horovod_accel.tensorflow.optimizer_reduce import GradientReducer


class _DistributedGradientTapeMixin:
    """Put in front of the wrapped tape's class; `_hvd_reducer` is set by
    DistributedGradientTape()."""

    def register_local_source(self, source):
        """Gradients for `source` (a variable or watched tensor) are not
        reduced; with scale_local_gradients they are divided by the set size."""
        self._hvd_reducer.register_local(source)

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=tf.UnconnectedGradients.NONE, use_generic_names=False):
        """tf.GradientTape.gradient, then every gradient reduced across the
        process set (same nesting as `sources`). Blocks in eager mode until
        the reduction is done. use_generic_names: accepted for upstream
        compatibility (core names are always derived from source positions)."""
        grads = super().gradient(target, sources, output_gradients=output_gradients,
                                 unconnected_gradients=unconnected_gradients)
        flat_sources = tf.nest.flatten(sources, expand_composites=False)
        flat_grads = tf.nest.flatten(grads, expand_composites=False)
        reduced = self._hvd_reducer.reduce(flat_grads, flat_sources)
        return tf.nest.pack_sequence_as(grads, reduced, expand_composites=False)

    def get_local_and_global_gradients(self, target, sources, output_gradients=None,
                                       use_generic_names=False):
        """gradient(), split as upstream: (local, global), two lists of
        (source, gradient) in the order of `sources` (a flat list) -- the
        sources registered local, and the others (reduced)."""
        sources = list(sources)
        grads = self.gradient(target, sources, output_gradients=output_gradients,
                              use_generic_names=use_generic_names)
        local_pairs, global_pairs = [], []
        for s, g in zip(sources, grads):
            (local_pairs if self._hvd_reducer.is_local(s) else global_pairs).append((s, g))
        return local_pairs, global_pairs


def DistributedGradientTape(gradtape, device_dense='', device_sparse='',
                            compression=Compression.none, sparse_as_dense=False, op=Average,
                            gradient_predivide_factor=1.0, num_groups=0, groups=None,
                            process_set=global_process_set, scale_local_gradients=True):
    """Wraps `gradtape` so `gradient()` averages (op) gradients across the
    ranks of `process_set` (upstream signature). See optimizer_reduce.py for
    compression, sparse_as_dense, groups and predivide semantics."""
    if not isinstance(gradtape, tf.GradientTape):
        raise ValueError(f"DistributedGradientTape wraps a tf.GradientTape, got "
                         f"{type(gradtape).__name__}.")
    if isinstance(gradtape, _DistributedGradientTapeMixin):
        raise ValueError("gradtape is already a DistributedGradientTape; wrap the plain "
                         "tf.GradientTape once.")
    groups = _buckets.resolve_groups(num_groups, groups)
    reducer = GradientReducer("DistributedGradientTape", device_dense, device_sparse,
                              compression, sparse_as_dense, op, gradient_predivide_factor,
                              groups, process_set, scale_local_gradients)
    cls = type(type(gradtape).__name__, (_DistributedGradientTapeMixin, type(gradtape)), {})
    tape = cls.__new__(cls)
    tape.__dict__.update(gradtape.__dict__)
    tape._hvd_reducer = reducer
    return tape


def PartialDistributedGradientTape(gradtape, device_dense='', device_sparse='',
                                   compression=Compression.none, sparse_as_dense=False,
                                   op=Average, gradient_predivide_factor=1.0, num_groups=0,
                                   groups=None, process_set=global_process_set,
                                   local_layers=None, scale_local_gradients=True):
    """DistributedGradientTape that keeps the gradients of `local_layers`
    (a Keras layer or a list of them) local: their trainable weights are
    registered with register_local_source()."""
    # Imports keras: on first use, not with horovod.tensorflow.
    from horovod_accel._keras.local_layers import local_layer_list  # noqa: PLC0415

    local_layers = local_layer_list(local_layers)
    tape = DistributedGradientTape(gradtape, device_dense, device_sparse, compression,
                                   sparse_as_dense, op, gradient_predivide_factor, num_groups,
                                   groups, process_set, scale_local_gradients)
    for layer in local_layers:
        for var in layer.trainable_weights:
            tape.register_local_source(var)
    return tape
