"""SyncBatchNormalization (upstream `horovod.tensorflow.SyncBatchNormalization`):
a Keras 3 BatchNormalization whose training-mode batch statistics are those
of the global batch across all ranks.

In training, each rank's per-channel sum, sum of squares and element count
are summed across ranks with one grouped allreduce, and the global mean and
variance normalise the local batch (and update the moving statistics, which
therefore stay equal on every rank). Masks are not supported (ValueError).
Inference uses the moving statistics, like BatchNormalization. Collective:
every rank must run the layer in training mode the same number of times.
"""
import keras
import tensorflow as tf

from horovod_accel.tensorflow.mpi_ops import Sum
from horovod_accel.tensorflow.reductions import grouped_allreduce


class SyncBatchNormalization(keras.layers.BatchNormalization):
    """BatchNormalization with statistics synchronised across ranks
    (arguments: keras.layers.BatchNormalization's; `synchronized` is
    always on and must not be passed). `fused` is upstream's argument:
    False (the default) is accepted and ignored -- Keras 3's
    BatchNormalization has no fused kernel to choose -- and True or None
    raise ValueError, as upstream."""

    def __init__(self, fused=False, **kwargs):
        if fused in (True, None):
            raise ValueError("SyncBatchNormalization does not support fused=True.")
        if kwargs.pop("synchronized", False):
            raise ValueError("SyncBatchNormalization is always synchronized through Horovod; do "
                             "not pass synchronized=True (that selects tf.distribute).")
        super().__init__(**kwargs)

    def _moments(self, inputs, mask):
        if mask is not None:
            raise ValueError("SyncBatchNormalization does not support masks; use "
                             "keras.layers.BatchNormalization for masked inputs.")
        x = tf.cast(inputs, tf.float32) if inputs.dtype in (tf.float16, tf.bfloat16) else inputs
        axes = self._reduction_axes
        local_sum = tf.reduce_sum(x, axis=axes)
        local_sq = tf.reduce_sum(tf.square(x), axis=axes)
        count = tf.cast(tf.size(x) // tf.size(local_sum), x.dtype)
        total_sum, total_sq, total_count = grouped_allreduce(
            [local_sum, local_sq, tf.reshape(count, [1])], op=Sum,
            name=f"SyncBatchNormalization.{self.name}")
        mean = total_sum / total_count
        variance = tf.maximum(total_sq / total_count - tf.square(mean), 0.0)
        return tf.cast(mean, inputs.dtype), tf.cast(variance, inputs.dtype)
