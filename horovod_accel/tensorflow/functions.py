"""Broadcasting variables and Python objects (upstream
`horovod.tensorflow.functions` plus broadcast_global_variables and
BroadcastGlobalVariablesHook).

Every function here is collective: all ranks of `process_set` call it in the
same order with the same `root_rank` (a *global* rank). In eager mode they
block until done; in a TF1 graph, broadcast_variables and
broadcast_global_variables return an op to run, while the object functions
run their ops in `session` (default: the default session). Object
serialization is horovod_accel/common/objects.py, shared with torch.
"""
import numpy as np
import tensorflow as tf

from horovod_accel.common.objects import (allgather_object_with, broadcast_object_with,
                                          object_op_names)
from horovod_accel.tensorflow.mpi_ops import (allgather, broadcast, global_process_set, rank)


def _executing_eagerly():
    return tf.executing_eagerly()


def _assign_broadcasts(variables, root_rank, process_set):
    # Positional names: the same on every rank for the same variable list,
    # and readable in stall reports.
    return tf.group(*[var.assign(broadcast(var, root_rank, name=f"broadcast_variables.{i}",
                                           process_set=process_set))
                      for i, var in enumerate(variables)])


_BROADCAST_FUNCTIONS = {}


def _broadcast_function(root_rank, process_set):
    """One tf.function per (root, set), so an eager broadcast of many
    variables runs concurrently (the core fuses the broadcasts) instead of
    one blocking op after another; it retraces only for a new variable list."""
    key = (root_rank, process_set.process_set_id)
    fn = _BROADCAST_FUNCTIONS.get(key)
    if fn is None:
        def run(variables):
            _assign_broadcasts(variables, root_rank, process_set)
        fn = _BROADCAST_FUNCTIONS[key] = tf.function(run, reduce_retracing=True)
    return fn


def broadcast_variables(variables, root_rank, process_set=global_process_set, inplace=False):
    """Assigns every variable the value it has on `root_rank`.

    Eager: done on return. Graph (TF1): returns the op that does it.
    inplace: accepted for upstream compatibility (the values are assigned
    either way; the core may receive a copy of each variable).
    """
    variables = list(variables)
    if not variables:
        return tf.no_op() if not _executing_eagerly() else None
    for v in variables:
        if not hasattr(v, "assign"):
            raise ValueError(f"broadcast_variables takes variables (with .assign), got "
                             f"{type(v).__name__}; use hvd.broadcast() for tensors.")
    if _executing_eagerly():
        # One tf.function, so the broadcasts run concurrently (the core fuses
        # them) instead of one blocking op after another.
        # Keras 3 variables wrap a tf.Variable (.value); tf.function takes
        # tf.Variables as arguments by reference.
        tf_vars = [v if isinstance(v, tf.Variable) else v.value for v in variables]
        _broadcast_function(root_rank, process_set)(tf_vars)
        return None
    return _assign_broadcasts(variables, root_rank, process_set)


def broadcast_global_variables(root_rank):
    """TF1 graph mode: the op that broadcasts every global variable from
    `root_rank`. In eager mode (no global-variable collection) it raises,
    telling what to use instead, as upstream does."""
    if _executing_eagerly():
        raise RuntimeError("hvd.broadcast_global_variables() does not support eager execution. "
                           "Please use `hvd.broadcast_variables(<model/optimizer variables>)` "
                           "instead.")
    return broadcast_variables(tf.compat.v1.global_variables(), root_rank)


class BroadcastGlobalVariablesHook(tf.compat.v1.train.SessionRunHook):
    """SessionRunHook that broadcasts all global variables from `root_rank`
    once the session is created (MonitoredTrainingSession), so every rank
    starts from the same (e.g. randomly initialised or restored) state.

    device: the device for the broadcast ops ('' = default).
    """

    def __init__(self, root_rank, device=''):
        super().__init__()
        self.root_rank = root_rank
        self.bcast_op = None
        self.device = device

    def begin(self):
        if not self.bcast_op or self.bcast_op.graph != tf.compat.v1.get_default_graph():
            with tf.device(self.device):
                self.bcast_op = broadcast_global_variables(self.root_rank)

    def after_create_session(self, session, coord):
        session.run(self.bcast_op)


# ---------------------------------------------------------------- objects


def _run(tensor, session, feed_dict=None):
    """The value of `tensor` as numpy: eagerly, or run in `session`."""
    if _executing_eagerly():
        return tensor.numpy()
    session = session or tf.compat.v1.get_default_session()
    if session is None:
        raise ValueError("broadcast_object/allgather_object in graph mode need a session: pass "
                         "session=... or call them inside `with session.as_default():`.")
    return session.run(tensor, feed_dict=feed_dict)


def _check_graph_open(what):
    if tf.compat.v1.get_default_graph().finalized:
        raise RuntimeError(f"{what} in graph mode adds ops to the graph, which is finalized (e.g. "
                           f"by MonitoredTrainingSession). Create the function with "
                           f"hvd.broadcast_object_fn() before the graph is finalized and call "
                           f"it in the session, or call {what} before creating the session.")


def broadcast_object(obj, root_rank=0, session=None, name=None, process_set=global_process_set):
    """Returns `obj` of `root_rank` on every rank (cloudpickle; others' `obj`
    is ignored). Graph mode runs two broadcasts in `session`."""
    return broadcast_object_fn(root_rank, session, name, process_set)(obj)


def broadcast_object_fn(root_rank=0, session=None, name=None, process_set=global_process_set):
    """A function obj -> root's obj. In graph mode its ops are built once
    (placeholders), so calling it repeatedly does not grow the graph."""
    size_name, data_name = object_op_names("broadcast_object", name)
    is_root = rank() == root_rank
    if _executing_eagerly():
        def broadcast_size(n):
            return broadcast(tf.constant([n], tf.int64), root_rank, name=size_name,
                             process_set=process_set).numpy()[0]

        def broadcast_bytes(data, n):
            t = tf.constant(np.frombuffer(data, np.uint8)) if data is not None else \
                tf.zeros([n], tf.uint8)
            return broadcast(t, root_rank, name=data_name, process_set=process_set).numpy()
    else:
        _check_graph_open("broadcast_object")
        size_in = tf.compat.v1.placeholder(tf.int64, [1])
        size_out = broadcast(size_in, root_rank, name=size_name, process_set=process_set)
        data_in = tf.compat.v1.placeholder(tf.uint8, [None])
        data_out = broadcast(data_in, root_rank, name=data_name, process_set=process_set)

        def broadcast_size(n):
            return _run(size_out, session, {size_in: [n]})[0]

        def broadcast_bytes(data, n):
            value = np.frombuffer(data, np.uint8) if data is not None else np.zeros(n, np.uint8)
            return _run(data_out, session, {data_in: value})

    def bcast(obj):
        return broadcast_object_with(obj, is_root, broadcast_size,
                                     lambda data, n: bytes(broadcast_bytes(data, n)))
    return bcast


def allgather_object(obj, session=None, name=None, process_set=global_process_set):
    """Returns the list of every set rank's `obj` in set-rank order
    (cloudpickle; objects may differ in type and size). Graph mode adds ops
    to the default graph and runs them in `session`."""
    if not _executing_eagerly():
        _check_graph_open("allgather_object")
    size_name, data_name = object_op_names("allgather_object", name)

    def gather_sizes(n):
        return _run(allgather(tf.constant([n], tf.int64), name=size_name,
                              process_set=process_set), session).tolist()

    def gather_bytes(data):
        return _run(allgather(tf.constant(np.frombuffer(data, np.uint8)), name=data_name,
                              process_set=process_set), session).tobytes()

    return allgather_object_with(obj, gather_sizes, gather_bytes)
