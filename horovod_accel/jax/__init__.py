"""horovod_accel's JAX adapter (import it as `import horovod.jax as hvd`).

Collectives over jax.Arrays: called on concrete arrays they run at once and
block (the eager path: host buffers through the shared op layer); called
on traced values (inside jax.jit, grad, vmap) they are staged into the
computation as XLA custom calls that run in program order on every rank
(xla_ops.py). See mpi_ops.py for the contract every op shares. Importing
this package imports jax but not the core; init() (or the first op) loads
it.
"""
from horovod_accel.jax import elastic
from horovod_accel.jax.compression import Compression
from horovod_accel.jax.functions import allgather_object, broadcast_object, broadcast_parameters
from horovod_accel.jax.mpi_ops import (
    Adasum, Average, HorovodInternalError, Max, Min, Product, ProcessSet, Sum, add_process_set,
    allgather, allreduce, alltoall, barrier, broadcast, ccl_built, cross_rank, cross_size,
    cuda_built, ddl_built, global_process_set, gloo_built, gloo_enabled, grouped_allgather,
    grouped_allreduce, grouped_reducescatter, init, is_initialized, join, local_rank,
    local_size, mpi_built, mpi_enabled, mpi_threads_supported, nccl_built, rank, reducescatter,
    remove_process_set, rocm_built, shutdown, size, start_timeline, stop_timeline)
from horovod_accel.jax.optimizer import DistributedOptimizer, allreduce_gradients

__all__ = [
    "init", "shutdown", "is_initialized", "start_timeline", "stop_timeline", "size", "local_size",
    "cross_size", "rank", "local_rank", "cross_rank", "mpi_threads_supported", "mpi_enabled",
    "mpi_built", "gloo_enabled", "gloo_built", "nccl_built", "ddl_built", "ccl_built",
    "cuda_built", "rocm_built",
    "Average", "Sum", "Adasum", "Min", "Max", "Product",
    "ProcessSet", "global_process_set", "add_process_set", "remove_process_set",
    "HorovodInternalError",
    "allreduce", "grouped_allreduce", "allgather", "grouped_allgather", "broadcast",
    "alltoall", "reducescatter", "grouped_reducescatter", "join", "barrier",
    "broadcast_parameters", "broadcast_object", "allgather_object",
    "Compression", "DistributedOptimizer", "allreduce_gradients", "elastic",
]
