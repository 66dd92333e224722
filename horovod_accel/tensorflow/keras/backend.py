"""The KerasBackend of horovod.tensorflow.keras: Keras 3 with
KERAS_BACKEND=tensorflow (the default), over horovod_accel.tensorflow."""
import tensorflow as tf
from tensorflow.python.ops import control_flow_util

import horovod_accel.tensorflow as hvd_tf
from horovod_accel._keras.backend import KerasBackend
from horovod_accel.tensorflow.optimizer_aggregation import LocalAggregator
from horovod_accel.tensorflow.optimizer_reduce import GradientReducer

_XLA_ERROR = (
    "horovod_accel's TensorFlow ops have no XLA kernels, but this train step is being compiled "
    "with XLA. Compile the model with `model.compile(..., jit_compile=False)` (Keras 3 picks XLA "
    "for jit_compile='auto' when a GPU is visible), or leave Horovod calls out of "
    "tf.function(jit_compile=True).")


def _make_variable(shape, dtype, name):
    """A zero tf.Variable outside any tf.function or Keras tracking."""
    with tf.init_scope():
        return tf.Variable(tf.zeros(shape, dtype), trainable=False, name=name)


class TFKerasBackend(KerasBackend):
    hvd = hvd_tf

    def gradient_reducer(self, *args):
        return GradientReducer(*args)

    def aggregator(self, passes, average_aggregated_gradients, reducer):
        return LocalAggregator(passes, average_aggregated_gradients, reducer, _make_variable)

    def compute_gradients(self, loss, var_list, grad_loss, tape):
        # Keras 2's Optimizer._compute_gradients.
        if not callable(loss) and tape is None:
            raise ValueError("`tape` is required when a `Tensor` loss is passed.")
        tape = tf.GradientTape() if tape is None else tape
        if callable(loss):
            with tape:
                if not callable(var_list):
                    tape.watch([v for v in var_list if isinstance(v, tf.Variable)])
                loss = loss()
                if callable(var_list):
                    var_list = var_list()
        var_list = list(tf.nest.flatten(var_list))
        return list(tape.gradient(loss, var_list, grad_loss)), var_list

    def check_traceable(self):
        if control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph()):
            raise ValueError(_XLA_ERROR)

    def allreduce(self, value, name, op, prescale_factor, postscale_factor, compression):
        kwargs = {} if compression is None else {"compression": compression}
        return hvd_tf.allreduce(tf.constant(value), name=name, op=op,
                                prescale_factor=prescale_factor,
                                postscale_factor=postscale_factor, **kwargs).numpy()

    def allgather(self, value, name):
        return hvd_tf.allgather(tf.constant(value), name=name).numpy()

    def broadcast(self, value, root_rank, name):
        return hvd_tf.broadcast(tf.constant(value), root_rank, name=name).numpy()

    def reducescatter(self, value, name, op):
        return hvd_tf.reducescatter(tf.constant(value), name=name, op=op).numpy()

    def broadcast_variables(self, variables, root_rank):
        hvd_tf.broadcast_variables(variables, root_rank)


BACKEND = TFKerasBackend()
