"""GradientReducer over TensorFlow tensors: the ReduceOps that let the
shared horovod_accel/common/gradient_reducer.py reduce a step's gradients
for DistributedGradientTape and both DistributedOptimizers (TF1, Keras).
Builds ops only, so it works eagerly, in tf.function and in TF1 graphs;
tf.IndexedSlices are the sparse gradients (reduced by allgather)."""
import tensorflow as tf

from horovod_accel.common import gradient_reducer as _common
from horovod_accel.tensorflow.reductions import allreduce, grouped_allreduce


class TFReduceOps(_common.ReduceOps):
    variable_type = "tf.Variable"

    @staticmethod
    def is_variable(x):
        # tf.Variable, or a Keras 3 variable (which wraps one).
        return isinstance(x, tf.Variable) or (hasattr(x, "assign") and hasattr(x, "trainable"))

    @staticmethod
    def is_sparse(grad):
        return isinstance(grad, tf.IndexedSlices)

    @staticmethod
    def to_dense(grad):
        return tf.convert_to_tensor(grad)

    @staticmethod
    def describe(grad):
        shape = grad.shape
        n = shape.num_elements() if shape.is_fully_defined() else None
        return (None if n is None else n * grad.dtype.size), grad.dtype

    @staticmethod
    def divide(grad, n):
        if isinstance(grad, tf.IndexedSlices):
            return tf.IndexedSlices(grad.values / tf.cast(n, grad.values.dtype), grad.indices,
                                    grad.dense_shape)
        return grad / tf.cast(n, grad.dtype)

    @staticmethod
    def allreduce(tensor, **kwargs):
        return allreduce(tensor, **kwargs)

    @staticmethod
    def grouped_allreduce(tensors, **kwargs):
        return grouped_allreduce(tensors, **kwargs)

    @staticmethod
    def sparse_allreduce(grad, op, name, process_set, device_sparse):
        return allreduce(grad, device_sparse=device_sparse, op=op, name=name,
                         process_set=process_set)

    @staticmethod
    def name_scope(name):
        return tf.name_scope(name)


def GradientReducer(*args, **kwargs):
    """common GradientReducer(ops=TFReduceOps, *args) -- see its docstring."""
    return _common.GradientReducer(TFReduceOps, *args, **kwargs)
