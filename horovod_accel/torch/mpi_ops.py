"""Upstream's `horovod.torch.mpi_ops`: every torch collective plus the basic API.

The ops live in ops_allreduce.py, ops_gather.py and ops_alltoall.py; this
module gathers them under upstream's module name, re-exports the basics
(init, size, rank, build flags, ...; bound in common/basic_names.py) as
module functions as upstream does, and adds `join` and `barrier`.

Like upstream, `is_homogeneous` is not re-exported here (use
`horovod.common.basics.HorovodBasics().is_homogeneous()`).
"""
from horovod_accel.common import basic_names as _basic_names
from horovod_accel.common.basic_names import *  # noqa: F401,F403 (upstream's basics, re-exported)
from horovod_accel.common.default_runtime import DEFAULT_RUNTIME as _DEFAULT_RUNTIME
from horovod_accel.common.exceptions import HorovodInternalError
from horovod_accel.torch import threads as _threads  # noqa: F401 -- registers the thread setter
from horovod_accel.common.process_sets import (ProcessSet, add_process_set, global_process_set,
                                               remove_process_set)
from horovod_accel.common.process_sets import registered_id
from horovod_accel.torch.compression import Compression
from horovod_accel.common.handles import HANDLES as _HANDLES
from horovod_accel.common.handles import submit_internal as _submit
from horovod_accel.torch import traced as _traced
from horovod_accel.torch.handles import poll, synchronize
from horovod_accel.torch.ops_allreduce import (allreduce, allreduce_, allreduce_async,
                                               allreduce_async_, grouped_allreduce,
                                               grouped_allreduce_, grouped_allreduce_async,
                                               grouped_allreduce_async_)
from horovod_accel.torch.ops_alltoall import (alltoall, alltoall_async, grouped_reducescatter,
                                              grouped_reducescatter_async, reducescatter,
                                              reducescatter_async)
from horovod_accel.torch.ops_gather import (allgather, allgather_async, broadcast, broadcast_,
                                            broadcast_async, broadcast_async_, grouped_allgather,
                                            grouped_allgather_async, sparse_allreduce_async)

# The job's topology, traced by torch.compile as constants (traced.py).
rank = _traced.constant_per_job(_basic_names.rank)
size = _traced.constant_per_job(_basic_names.size)
local_rank = _traced.constant_per_job(_basic_names.local_rank)
local_size = _traced.constant_per_job(_basic_names.local_size)
cross_rank = _traced.constant_per_job(_basic_names.cross_rank)
cross_size = _traced.constant_per_job(_basic_names.cross_size)

# ---------------------------------------------------------------- join / barrier


def join(device=-1) -> int:
    """Marks this rank as finished with its data and blocks until every rank
    has joined. Until then, allreduces submitted by the other ranks proceed
    with this rank contributing zeros (other ops involving a joined rank
    fail). Returns the global rank that joined last.

    device: -1 for CPU (upstream's convention), else the accelerator index.
    Raises HorovodInternalError if the join fails (e.g. shutdown).
    """
    rt = _DEFAULT_RUNTIME.initialized_runtime()
    handle = _submit("join", lambda: rt.enqueue_join(int(device)), keep=(),
                     finish=lambda works: int(works[0].join_result()))
    last = synchronize(handle)
    # Every rank gets here once all have joined: unnamed-op numbering
    # realigns (the early joiners skipped the others' ops).
    _HANDLES.realign()
    return last


def barrier(process_set=global_process_set):
    """Blocks until every rank of `process_set` has reached the barrier
    (other named ops may still be pending). Raises HorovodInternalError if
    the barrier fails, ValueError if this rank is not in the set."""
    ps_id = registered_id(process_set)
    rt = _DEFAULT_RUNTIME.initialized_runtime()
    handle = _submit("barrier", lambda: rt.enqueue_barrier(ps_id), keep=(),
                     finish=lambda works: None)
    synchronize(handle)


__all__ = _basic_names.BASICS + _basic_names.REDUCE_OPS + [
    # process sets, errors
    "ProcessSet", "global_process_set",
    "add_process_set", "remove_process_set", "HorovodInternalError", "Compression",
    # ops
    "allreduce", "allreduce_async", "allreduce_", "allreduce_async_", "grouped_allreduce",
    "grouped_allreduce_async", "grouped_allreduce_", "grouped_allreduce_async_",
    "sparse_allreduce_async", "allgather", "allgather_async", "grouped_allgather",
    "grouped_allgather_async", "broadcast", "broadcast_async", "broadcast_", "broadcast_async_",
    "alltoall", "alltoall_async", "reducescatter", "reducescatter_async", "grouped_reducescatter",
    "grouped_reducescatter_async", "join", "barrier", "poll", "synchronize",
]
