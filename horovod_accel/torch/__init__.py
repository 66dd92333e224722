"""horovod_accel's PyTorch adapter: upstream `horovod.torch` (import it as
`import horovod.torch as hvd`).

The adapter is pure Python: tensors cross into the framework-neutral core as
raw pointers (tensors.py), so it works with any torch version. Importing it
does not load the core; `init()` (or any build-flag query) does.
`hvd.elastic` is the subpackage `horovod.torch.elastic` (elastic training).
"""
from horovod_accel.torch.split_backend import compile_backend
from horovod_accel.torch.compression import Compression
from horovod_accel.torch.functions import (allgather_object, broadcast_object,
                                           broadcast_optimizer_state, broadcast_parameters)
from horovod_accel.torch.mpi_ops import (
    Adasum, Average, HorovodInternalError, Max, Min, Product, ProcessSet, Sum, add_process_set,
    allgather, allgather_async, allreduce, allreduce_, allreduce_async, allreduce_async_, alltoall,
    alltoall_async, barrier, broadcast, broadcast_, broadcast_async, broadcast_async_, ccl_built,
    cross_rank, cross_size, cuda_built, ddl_built, global_process_set, gloo_built, gloo_enabled,
    grouped_allgather, grouped_allgather_async, grouped_allreduce, grouped_allreduce_,
    grouped_allreduce_async, grouped_allreduce_async_, grouped_reducescatter,
    grouped_reducescatter_async, init, is_initialized, join, local_rank, local_size, mpi_built,
    mpi_enabled, mpi_threads_supported, nccl_built, poll, rank, reducescatter, reducescatter_async,
    remove_process_set, rocm_built, shutdown, size, sparse_allreduce_async, start_timeline,
    stop_timeline, synchronize)
from horovod_accel.torch import custom_ops  # noqa: F401,E402 -- torch.ops.horovod, for torch.compile
from horovod_accel.torch.optimizer import DistributedOptimizer
from horovod_accel.torch.sync_batch_norm import SyncBatchNorm
from horovod_accel.torch import elastic  # noqa: E402 -- `hvd.elastic`, as upstream
