"""horovod.keras under KERAS_BACKEND=torch: the basics of horovod_accel.torch
plus the shared Keras API (horovod_accel/_keras/api.py) bound to the torch
KerasBackend."""
from horovod_accel._keras.api import make_api as _make_api
from horovod_accel.keras.torch_backend import BACKEND as _BACKEND
from horovod_accel.torch import (  # noqa: F401 -- the basics, re-exported
    Adasum, Average, Compression, HorovodInternalError, Max, Min, Product, ProcessSet, Sum,
    add_process_set, ccl_built, cross_rank, cross_size, cuda_built, ddl_built, global_process_set,
    gloo_built, gloo_enabled, init, is_initialized, local_rank, local_size, mpi_built,
    mpi_enabled, mpi_threads_supported, nccl_built, rank, remove_process_set, rocm_built,
    shutdown, size, start_timeline, stop_timeline)

# DistributedOptimizer, PartialDistributedOptimizer, broadcast_global_variables,
# allreduce, allgather, broadcast, reducescatter, load_model
globals().update(_make_api(_BACKEND))
__all__ = [n for n in globals() if not n.startswith("_")]
