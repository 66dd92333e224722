"""Upstream's `horovod.mxnet.mpi_ops`: every MXNet collective plus the basic
API (init, size, rank, build flags, ...; bound in common/basic_names.py).

The ops live in ops_engine.py (allreduce, broadcast, reducescatter and their
grouped / in-place forms: non-blocking, on MXNet's engine) and
ops_blocking.py (allgather, alltoall, join, barrier: blocking, as
upstream's).
"""
from horovod_accel.common import basic_names as _basic_names
from horovod_accel.common.basic_names import *  # noqa: F401,F403 (upstream's basics, re-exported)
from horovod_accel.common.exceptions import HorovodInternalError  # noqa: F401 (re-export)
from horovod_accel.common.process_sets import (ProcessSet, add_process_set,  # noqa: F401
                                               global_process_set, remove_process_set)
from horovod_accel.mxnet.ops_blocking import (alltoall, allgather, barrier,  # noqa: F401
                                              grouped_allgather, join)
from horovod_accel.mxnet.ops_engine import (allreduce, allreduce_, broadcast,  # noqa: F401
                                            broadcast_, grouped_allreduce, grouped_allreduce_,
                                            grouped_reducescatter, reducescatter)

__all__ = _basic_names.BASICS + _basic_names.REDUCE_OPS + [
    "ProcessSet", "global_process_set", "add_process_set", "remove_process_set",
    "HorovodInternalError",
    "allreduce", "allreduce_", "grouped_allreduce", "grouped_allreduce_", "allgather",
    "grouped_allgather", "broadcast", "broadcast_", "alltoall", "reducescatter",
    "grouped_reducescatter", "join", "barrier",
]
