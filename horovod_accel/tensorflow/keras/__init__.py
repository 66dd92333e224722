"""Upstream's `horovod.tensorflow.keras` for Keras 3 on TensorFlow (tf.keras on
TensorFlow >= 2.16), imported by users (`import horovod.tensorflow.keras as
hvd`) and by horovod_accel/keras/ when KERAS_BACKEND=tensorflow.

The basics (init, rank, size, ..., process sets, Compression, reduce ops)
are horovod.tensorflow's. DistributedOptimizer wraps a Keras 3 optimizer for
model.fit and custom loops; callbacks and load_model follow upstream. The
value helpers (allreduce, allgather, broadcast, reducescatter) take numpy
values or tensors and return numpy arrays (upstream returned
K.get_value(...)). Shared implementation: horovod_accel/_keras/.
Differences from upstream's Keras 2 version: docs/tensorflow_keras.md.
"""
from horovod_accel._keras.api import make_api as _make_api
from horovod_accel.tensorflow import (  # noqa: F401 -- the basics, re-exported
    Adasum, Average, Compression, HorovodInternalError, Max, Min, Product, ProcessSet, Sum,
    add_process_set, ccl_built, cross_rank, cross_size, cuda_built, ddl_built, global_process_set,
    gloo_built, gloo_enabled, init, is_homogeneous, is_initialized, local_rank, local_size,
    mpi_built, mpi_enabled, mpi_threads_supported, nccl_built, rank, remove_process_set,
    rocm_built, shutdown, size, start_timeline, stop_timeline)
from horovod_accel.tensorflow.keras import callbacks, elastic  # noqa: F401
from horovod_accel.tensorflow.keras.backend import BACKEND as _BACKEND

# DistributedOptimizer, PartialDistributedOptimizer, broadcast_global_variables,
# allreduce, allgather, broadcast, reducescatter, load_model
globals().update(_make_api(_BACKEND))
__all__ = [n for n in globals() if not n.startswith("_")]
