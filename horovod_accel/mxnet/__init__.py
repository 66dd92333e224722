"""horovod_accel's MXNet adapter: upstream `horovod.mxnet` for MXNet 1.x
(import it as `import horovod.mxnet as hvd`).

Collectives whose output shape is known up front (allreduce, broadcast,
reducescatter, grouped and in-place forms) run as asynchronous operations of
MXNet's dependency engine through a small library built without MXNet
(libhvda_mxnet.so, csrc/mxnet/); the others block, as upstream's do. See
docs/mxnet.md. Importing this package imports mxnet but not the core; init()
(or the first op) loads it.
"""
from horovod_accel.mxnet.compression import Compression
from horovod_accel.mxnet.errors import CollectiveError, InvalidArgumentError
from horovod_accel.mxnet.functions import allgather_object, broadcast_object, broadcast_parameters
from horovod_accel.mxnet.mpi_ops import (
    Adasum, Average, HorovodInternalError, Max, Min, Product, ProcessSet, Sum, add_process_set,
    allgather, allreduce, allreduce_, alltoall, barrier, broadcast, broadcast_, ccl_built,
    cross_rank, cross_size, cuda_built, ddl_built, global_process_set, gloo_built,
    gloo_enabled, grouped_allgather, grouped_allreduce, grouped_allreduce_,
    grouped_reducescatter, init, is_initialized, join, local_rank, local_size, mpi_built,
    mpi_enabled, mpi_threads_supported, nccl_built, rank, reducescatter, remove_process_set,
    rocm_built, shutdown, size, start_timeline, stop_timeline)
from horovod_accel.mxnet.optimizer import DistributedOptimizer
from horovod_accel.mxnet.trainer import DistributedTrainer
