"""Upstream's `horovod.tensorflow.mpi_ops`: the TensorFlow collective ops and
the basic API (init, size, rank, ...). Their gradients are registered by
op_gradients.py, which the package's __init__ imports.

The ops are real TensorFlow graph ops with async CPU kernels from the op
library `libhvda_tf_ops.so` (csrc/tensorflow/, built against TensorFlow's C
API only; docs/design/tensorflow.md). They work in eager mode, inside
tf.function and in TF1 graphs. Loading this module loads the library and
hands it the core's C API table (`_core.Runtime.c_api()`).

Core tensor names (they match ops across ranks):
- graph mode / tf.function: the TF node name, as upstream. `name` given ->
  that node name (under the current name scope unless ignore_name_scope);
  else `Horovod<Op>_<tensor name>`; TF makes node names unique in a graph.
- eager mode: `name` when given, else `Horovod<Op>.noname.<n>` with n from
  the shared unnamed-op counters (horovod_accel/common/handles.py), so ranks
  that issue the same unnamed ops agree, also across join().
Errors raise TensorFlow's exceptions with the core's message: a cross-rank
mismatch -> tf.errors.FailedPreconditionError, a bad argument ->
tf.errors.InvalidArgumentError, shutdown / a lost peer -> tf.errors.AbortedError
(others tf.errors.UnknownError).
"""
import ctypes
import functools
import os
import re

import tensorflow as tf

from horovod_accel.common import basic_names as _basic_names
from horovod_accel.tensorflow import device_kernels as _device_kernels
from horovod_accel.tensorflow import threads as _threads  # noqa: F401 -- registers the thread setter
from horovod_accel.common.basic_names import *  # noqa: F401,F403 (upstream's basics, re-exported)
from horovod_accel.common.basic_names import Sum, is_homogeneous  # noqa: F401 (used; upstream API)
from horovod_accel.common.default_runtime import DEFAULT_RUNTIME as _DEFAULT_RUNTIME
from horovod_accel.common.exceptions import HorovodInternalError  # noqa: F401 (re-export)
from horovod_accel.common.handles import HANDLES as _HANDLES
from horovod_accel.common.process_sets import (ProcessSet, add_process_set, global_process_set,
                                               remove_process_set)
from horovod_accel.common.process_sets import registered_id as _ps_id

_LIB_FILE = "libhvda_tf_ops.so"
_BUILD_HINT = ("Every build includes it unless HVDA_BUILD_TENSORFLOW=OFF: reinstall horovod_accel, "
               "or build it from the source tree with `pip install -e .` or `cmake -S . -B build/python "
               "-DHVDA_PYTHON_OUTPUT_DIR=$PWD/horovod_accel && cmake --build build/python "
               "--target hvda_tf_ops`.")


def _load_library():
    """Loads the op library and connects it to the process's core runtime."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), _LIB_FILE)
    if not os.path.exists(path):
        raise ImportError(f"horovod_accel's TensorFlow op library ({path}) is not built. "
                          f"{_BUILD_HINT}")
    try:
        lib = tf.load_op_library(path)
    except Exception as e:  # tf.errors.NotFoundError and friends
        raise ImportError(f"horovod_accel's TensorFlow op library failed to load: {e}. "
                          f"{_BUILD_HINT}") from e
    table, runtime = _DEFAULT_RUNTIME.runtime().c_api()
    setter = ctypes.CDLL(path).hvda_tf_set_core_api
    setter.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
    setter.restype = ctypes.c_int
    if setter(table, runtime) != 0:
        raise ImportError(f"{path} does not match this horovod_accel core (core C API version "
                          f"mismatch). {_BUILD_HINT}")
    return lib


MPI_LIB = _load_library()
_DEVICE_KERNELS = _device_kernels.DeviceKernels(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), _LIB_FILE))

def _executing_eagerly():
    """True in eager mode (upstream's helper; False inside tf.function and TF1 graphs)."""
    return tf.executing_eagerly()


def _normalize_name(name):
    """A TF tensor name as a valid node-name fragment (upstream's rule)."""
    return re.sub("[^a-zA-Z0-9_]", "_", name)


def _string_tensor(text):
    """A host scalar string tensor. The eager ops get their name input as one:
    given a Python str, TF's eager fast path for a generated op wrapper falls
    back to the wrapper's Python slow path, which costs more than the rest of
    a small eager allreduce (docs/design/tensorflow.md, "Eager kernels wait")."""
    with tf.device("/cpu:0"):
        return tf.constant(text, dtype=tf.string)


# Named eager ops repeat their names (a training loop's gradients), so their
# name tensors are kept; unnamed ops' names never repeat and are not cached.
# Bounded: a program with more distinct names makes a tensor per call.
_name_tensor = functools.lru_cache(maxsize=4096)(_string_tensor)


def _run(op_type, fn, name_source, name, process_set_id, **attrs):
    """Calls the raw op `fn` with the core name rules of this module's
    docstring. `name_source` (a tensor) names the node in graph mode (None:
    op_type alone).

    Eager ops get blocking=True: the kernel waits for its collective on the
    calling thread (which TF blocks until the op is done anyway), so the
    core runs the negotiation inline and counts the thread as waiting for
    deadlock detection. Graph ops keep the default (False): they must never
    block TF's inter-op threads (NOTE [Blocking kernels in eager mode] in
    csrc/tensorflow/async_op.cc)."""
    _DEVICE_KERNELS.ensure()
    if _executing_eagerly():
        if name is not None:
            return fn(tensor_name=_name_tensor(str(name)), process_set_id=process_set_id,
                      blocking=True, **attrs)
        return _HANDLES.run_unnamed(
            op_type, process_set_id,
            lambda core_name: fn(tensor_name=_string_tensor(core_name),
                                 process_set_id=process_set_id, blocking=True, **attrs),
            rejected=(tf.errors.InvalidArgumentError,))
    if name is None:
        name = (op_type if name_source is None
                else f"{op_type}_{_normalize_name(name_source.name)}")
    # The name input lives in host memory on every device (the kernels say
    # so); made here on the CPU, since an accelerator's device scope would
    # place the string constant where it has no kernel.
    with tf.device("/device:CPU:0"):
        no_name = tf.constant("")
    return fn(tensor_name=no_name, name=name, process_set_id=process_set_id, **attrs)


def _as_tensor(value):
    """tf.convert_to_tensor(value), skipped for a tf.Tensor (which it would
    return unchanged; the call is a visible part of a small eager op)."""
    return value if isinstance(value, tf.Tensor) else tf.convert_to_tensor(value)


def _first(tensors):
    return tensors[0] if tensors else None


# ---------------------------------------------------------------- allreduce


def _allreduce_ps(tensor, name, op, prescale_factor, postscale_factor, ignore_name_scope,
                  process_set_id):
    return _run("HorovodAllreduce", MPI_LIB.horovod_allreduce, tensor, name, process_set_id,
                tensor=tensor, reduce_op=int(op), prescale_factor=float(prescale_factor),
                postscale_factor=float(postscale_factor), ignore_name_scope=ignore_name_scope)


def _allreduce(tensor, name=None, op=Sum, prescale_factor=1.0, postscale_factor=1.0,
               ignore_name_scope=False, process_set=global_process_set):
    """Allreduce of a dense tensor (no compression, no IndexedSlices); a new
    tensor of the same shape and dtype. op: Average, Sum, Adasum, Min, Max,
    Product. Average divides by the process set's size in the core."""
    tensor = _as_tensor(tensor)
    return _allreduce_ps(tensor, name, op, prescale_factor, postscale_factor, ignore_name_scope,
                         _ps_id(process_set))



def _grouped_allreduce_ps(tensors, name, op, prescale_factor, postscale_factor, ignore_name_scope,
                          process_set_id):
    if not tensors:
        return []
    return _run("HorovodGroupedAllreduce", MPI_LIB.horovod_grouped_allreduce, _first(tensors),
                name, process_set_id, tensors=tensors, reduce_op=int(op),
                prescale_factor=float(prescale_factor), postscale_factor=float(postscale_factor),
                ignore_name_scope=ignore_name_scope)


def _grouped_allreduce(tensors, name=None, op=Sum, prescale_factor=1.0, postscale_factor=1.0,
                       ignore_name_scope=False, process_set=global_process_set):
    """Allreduce of a list of dense tensors, negotiated and fused as one
    group (dtypes may differ); a list of new tensors."""
    tensors = [_as_tensor(t) for t in tensors]
    return _grouped_allreduce_ps(tensors, name, op, prescale_factor, postscale_factor,
                                 ignore_name_scope, _ps_id(process_set))



# ---------------------------------------------------------------- gather / broadcast / alltoall


def _allgather_ps(tensor, name, ignore_name_scope, process_set_id):
    return _run("HorovodAllgather", MPI_LIB.horovod_allgather, tensor, name, process_set_id,
                tensor=tensor, ignore_name_scope=ignore_name_scope)


def allgather(tensor, name=None, ignore_name_scope=False, process_set=global_process_set):
    """Concatenates `tensor` of every rank of the set along dimension 0 (the
    first dimension may differ between ranks; the others must match)."""
    tensor = _as_tensor(tensor)
    return _allgather_ps(tensor, name, ignore_name_scope, _ps_id(process_set))


def grouped_allgather(tensors, name=None, ignore_name_scope=False, process_set=global_process_set):
    """allgather of each tensor of a list, negotiated as one group."""
    tensors = [_as_tensor(t) for t in tensors]
    if not tensors:
        return []
    return _run("HorovodGroupedAllgather", MPI_LIB.horovod_grouped_allgather, _first(tensors), name,
                _ps_id(process_set), tensors=tensors, ignore_name_scope=ignore_name_scope)


def _broadcast_ps(tensor, root_rank, name, ignore_name_scope, process_set_id):
    return _run("HorovodBroadcast", MPI_LIB.horovod_broadcast, tensor, name, process_set_id,
                tensor=tensor, root_rank=int(root_rank), ignore_name_scope=ignore_name_scope)


def broadcast(tensor, root_rank, name=None, ignore_name_scope=False, process_set=global_process_set):
    """`tensor` of global rank root_rank, on every rank of the set (a new tensor)."""
    tensor = _as_tensor(tensor)
    return _broadcast_ps(tensor, root_rank, name, ignore_name_scope, _ps_id(process_set))


def broadcast_(variables, root_rank, name=None, process_set=global_process_set):
    """In-place broadcast: assigns to each tf.Variable of `variables` (one or
    a list) its value on global rank root_rank. Returns the assigned
    variables (eager) or the assign ops (graph), a list when given a list.
    Names: "<name>_<i>" when name is given."""
    single = not isinstance(variables, (list, tuple))
    var_list = [variables] if single else list(variables)
    ps = _ps_id(process_set)
    out = []
    for i, v in enumerate(var_list):
        op_name = None if name is None else (name if single else f"{name}_{i}")
        value = _broadcast_ps(_as_tensor(v), root_rank, op_name, False, ps)
        out.append(v.assign(value))
    return out[0] if single else out


def _alltoall_ps(tensor, splits, name, ignore_name_scope, process_set_id):
    return _run("HorovodAlltoall", MPI_LIB.horovod_alltoall, tensor, name, process_set_id,
                tensor=tensor, splits=splits, ignore_name_scope=ignore_name_scope)


def alltoall(tensor, splits=None, name=None, ignore_name_scope=False,
             process_set=global_process_set):
    """Sends splits[i] rows (dimension 0) of `tensor` to set rank i and
    concatenates what each rank sent here. splits None: equal parts (dim 0
    divisible by the set size). Returns (output, received_splits) when
    splits is given, else output."""
    tensor = _as_tensor(tensor)
    split_t = tf.zeros([0], tf.int32) if splits is None else tf.cast(splits, tf.int32)
    out, received = _alltoall_ps(tensor, split_t, name, ignore_name_scope, _ps_id(process_set))
    return out if splits is None else (out, received)


# ---------------------------------------------------------------- reducescatter


def _reducescatter_ps(tensor, name, op, prescale_factor, postscale_factor, ignore_name_scope,
                      process_set_id):
    return _run("HorovodReducescatter", MPI_LIB.horovod_reducescatter, tensor, name,
                process_set_id, tensor=tensor, reduce_op=int(op),
                prescale_factor=float(prescale_factor), postscale_factor=float(postscale_factor),
                ignore_name_scope=ignore_name_scope)


def _reducescatter(tensor, name=None, op=Sum, ignore_name_scope=False,
                   process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    """Reduces `tensor` over the set and returns this rank's part of
    dimension 0 (set ranks below dim0 % size get one extra row)."""
    tensor = _as_tensor(tensor)
    return _reducescatter_ps(tensor, name, op, prescale_factor, postscale_factor,
                             ignore_name_scope, _ps_id(process_set))



def _grouped_reducescatter_ps(tensors, name, op, prescale_factor, postscale_factor,
                              ignore_name_scope, process_set_id):
    if not tensors:
        return []
    return _run("HorovodGroupedReducescatter", MPI_LIB.horovod_grouped_reducescatter,
                _first(tensors), name, process_set_id, tensors=tensors, reduce_op=int(op),
                prescale_factor=float(prescale_factor), postscale_factor=float(postscale_factor),
                ignore_name_scope=ignore_name_scope)


def _grouped_reducescatter(tensors, name=None, op=Sum, ignore_name_scope=False,
                           process_set=global_process_set, prescale_factor=1.0,
                           postscale_factor=1.0):
    """reducescatter of each dense tensor of a list, fused as one group."""
    tensors = [_as_tensor(t) for t in tensors]
    return _grouped_reducescatter_ps(tensors, name, op, prescale_factor, postscale_factor,
                                     ignore_name_scope, _ps_id(process_set))



# ---------------------------------------------------------------- join / barrier / queries


def join():
    """Marks this rank as done with its data and blocks until every rank
    has joined; meanwhile other ranks' allreduces see zeros from it. Returns
    the global rank that joined last (a scalar int32 tensor, as upstream; in
    graph mode the op that does it)."""
    out = MPI_LIB.horovod_join(blocking=_executing_eagerly())  # _run's rule for blocking
    if _executing_eagerly():
        # Ranks that joined early skipped the others' unnamed ops.
        _HANDLES.realign()
    return out


def barrier(process_set=global_process_set):
    """Blocks until every rank of the set reaches the barrier (eager); in
    graph mode returns the op that does it."""
    return MPI_LIB.horovod_barrier(process_set_id=_ps_id(process_set),
                                   blocking=_executing_eagerly())


def size_op(process_set_id=0, name=None):
    """An op returning the number of ranks of process set process_set_id."""
    return MPI_LIB.horovod_size(process_set_id=process_set_id, name=name)


def local_size_op(name=None):
    """An op returning the number of ranks on this host."""
    return MPI_LIB.horovod_local_size(name=name)


def rank_op(name=None):
    """An op returning this process's global rank."""
    return MPI_LIB.horovod_rank(name=name)


def local_rank_op(name=None):
    """An op returning this process's rank on its host."""
    return MPI_LIB.horovod_local_rank(name=name)


def process_set_included_op(process_set_id=0, name=None):
    """An op returning 1 if this rank is in process set process_set_id, else 0."""
    return MPI_LIB.horovod_process_set_included(process_set_id=process_set_id, name=name)


__all__ = _basic_names.BASICS + ["is_homogeneous"] + _basic_names.REDUCE_OPS + [
    "ProcessSet", "global_process_set",
    "add_process_set", "remove_process_set", "HorovodInternalError",
    "handle_average_backwards_compatibility", "check_num_rank_power_of_2",
    "allgather", "grouped_allgather", "broadcast", "broadcast_", "alltoall", "join", "barrier", "size_op", "local_size_op",
    "rank_op", "local_rank_op", "process_set_included_op",
]
