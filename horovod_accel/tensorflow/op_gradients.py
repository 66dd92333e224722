"""The gradient registrations of the Horovod TensorFlow ops (mpi_ops.py).

Importing this module registers them with TF (`RegisterGradient`); the
package's __init__ imports it once, so they are in place whenever the ops
are. TF calls them in graph mode and under GradientTape. Each runs the
matching collective on the incoming gradient, with the forward op's process
set:

- allreduce: allreduce of the gradient with the same op and scale factors.
- allgather: Average allreduce of the gradient, then this rank's rows (the
  first dimensions of every rank come from an allgather of dim 0).
- broadcast: Average allreduce of the gradient; zero on non-root ranks.
- alltoall: alltoall of the gradient back, with the received splits.
- reducescatter: allgather of the gradient (scaled by 1/size for Average and
  by the scale factors).
"""
import tensorflow as tf
from tensorflow.python.framework import ops as _tf_ops

from horovod_accel.tensorflow import mpi_ops as _m


def _scopes(op):
    return op.get_attr("ignore_name_scope"), op.get_attr("process_set_id")


def _reduce_attrs(op):
    return op.get_attr("reduce_op"), op.get_attr("prescale_factor"), op.get_attr("postscale_factor")


@_tf_ops.RegisterGradient("HorovodAllreduce")
def _allreduce_grad(op, grad):
    scope, ps = _scopes(op)
    red, pre, post = _reduce_attrs(op)
    return _m._allreduce_ps(grad, None, red, pre, post, scope, ps), None


@_tf_ops.RegisterGradient("HorovodGroupedAllreduce")
def _grouped_allreduce_grad(op, *grads):
    scope, ps = _scopes(op)
    red, pre, post = _reduce_attrs(op)
    return _m._grouped_allreduce_ps(list(grads), None, red, pre, post, scope, ps) + [None]


def _own_rows(op, grad, scope, ps):
    """This rank's rows of an allgathered gradient (after averaging it)."""
    grad = _m._allreduce_ps(grad, None, _m.Average, 1.0, 1.0, scope, ps)
    with tf.device("/cpu:0"):
        d0 = tf.reshape(tf.shape(op.inputs[0], out_type=tf.int32)[0], [1])
        dims = _m._allgather_ps(d0, None, scope, ps)
    parts = tf.split(grad, num_or_size_splits=dims, axis=0, num=_set_size(ps))
    return parts[_set_rank(ps)]


def _set_size(ps):
    return _m._DEFAULT_RUNTIME.initialized_runtime().process_set_size(ps)


def _set_rank(ps):
    return _m._DEFAULT_RUNTIME.initialized_runtime().process_set_rank(ps)


@_tf_ops.RegisterGradient("HorovodAllgather")
def _allgather_grad(op, grad):
    scope, ps = _scopes(op)
    return _own_rows(op, grad, scope, ps), None


@_tf_ops.RegisterGradient("HorovodGroupedAllgather")
def _grouped_allgather_grad(op, *grads):
    scope, ps = _scopes(op)
    outs = []
    for i, g in enumerate(grads):
        reduced = _m._allreduce_ps(g, None, _m.Average, 1.0, 1.0, scope, ps)
        with tf.device("/cpu:0"):
            d0 = tf.reshape(tf.shape(op.inputs[i], out_type=tf.int32)[0], [1])
            dims = _m._allgather_ps(d0, None, scope, ps)
        outs.append(tf.split(reduced, num_or_size_splits=dims, axis=0,
                             num=_set_size(ps))[_set_rank(ps)])
    return outs + [None]


@_tf_ops.RegisterGradient("HorovodBroadcast")
def _broadcast_grad(op, grad):
    scope, ps = _scopes(op)
    reduced = _m._allreduce_ps(grad, None, _m.Average, 1.0, 1.0, scope, ps)
    if _m.rank() != op.get_attr("root_rank"):
        reduced = reduced * 0
    return reduced, None


@_tf_ops.RegisterGradient("HorovodAlltoall")
def _alltoall_grad(op, grad_out, grad_splits):
    scope, ps = _scopes(op)
    back, _ = _m._alltoall_ps(grad_out, op.outputs[1], None, scope, ps)
    return back, None, None


def _gather_scaled(op, grad, scope, ps):
    red, pre, post = _reduce_attrs(op)
    scale = pre * post
    if red == _m.Average:
        scale /= _set_size(ps)
    out = _m._allgather_ps(grad, None, scope, ps)
    if scale != 1.0:
        out = out * tf.cast(scale, out.dtype)
    return out


@_tf_ops.RegisterGradient("HorovodReducescatter")
def _reducescatter_grad(op, grad):
    scope, ps = _scopes(op)
    return _gather_scaled(op, grad, scope, ps), None


@_tf_ops.RegisterGradient("HorovodGroupedReducescatter")
def _grouped_reducescatter_grad(op, *grads):
    scope, ps = _scopes(op)
    return [_gather_scaled(op, g, scope, ps) for g in grads] + [None]
