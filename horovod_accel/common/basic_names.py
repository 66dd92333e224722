"""Upstream's basic names, bound once for every framework adapter.

Upstream's `horovod.<framework>.mpi_ops` modules bind the methods of a
`HorovodBasics` (init, size, rank, build flags, ...) and its reduction-op
constants as module-level names. Here they are bound in this one module;
torch/mpi_ops.py and tensorflow/mpi_ops.py re-export them
(`from horovod_accel.common.basic_names import *`), so an adapter only adds
its ops. `HorovodBasics` is stateless: every name acts on the process's
default runtime.
"""
from horovod_accel.common.basics import HorovodBasics
from horovod_accel.common.util import (check_num_rank_power_of_2,
                                       get_average_backwards_compatibility_fun)

_basics = HorovodBasics()

init = _basics.init
shutdown = _basics.shutdown
is_initialized = _basics.is_initialized
start_timeline = _basics.start_timeline
stop_timeline = _basics.stop_timeline
size = _basics.size
local_size = _basics.local_size
cross_size = _basics.cross_size
rank = _basics.rank
local_rank = _basics.local_rank
cross_rank = _basics.cross_rank
mpi_threads_supported = _basics.mpi_threads_supported
mpi_enabled = _basics.mpi_enabled
mpi_built = _basics.mpi_built
gloo_enabled = _basics.gloo_enabled
gloo_built = _basics.gloo_built
nccl_built = _basics.nccl_built
ddl_built = _basics.ddl_built
ccl_built = _basics.ccl_built
cuda_built = _basics.cuda_built
rocm_built = _basics.rocm_built
# Not in __all__: upstream's tensorflow mpi_ops exports it, its torch one does not.
is_homogeneous = _basics.is_homogeneous

Average = HorovodBasics.Average
Sum = HorovodBasics.Sum
Adasum = HorovodBasics.Adasum
Min = HorovodBasics.Min
Max = HorovodBasics.Max
Product = HorovodBasics.Product

handle_average_backwards_compatibility = get_average_backwards_compatibility_fun(_basics)

BASICS = [
    "init", "shutdown", "is_initialized", "start_timeline", "stop_timeline", "size", "local_size",
    "cross_size", "rank", "local_rank", "cross_rank", "mpi_threads_supported", "mpi_enabled",
    "mpi_built", "gloo_enabled", "gloo_built", "nccl_built", "ddl_built", "ccl_built",
    "cuda_built", "rocm_built",
]
REDUCE_OPS = ["Average", "Sum", "Adasum", "Min", "Max", "Product"]
# Reduce-op code -> its name, for messages.
REDUCE_OP_NAMES = {getattr(HorovodBasics, name): name for name in REDUCE_OPS}

# With the two helpers upstream's mpi_ops modules import from horovod.common.util.
__all__ = BASICS + REDUCE_OPS + ["handle_average_backwards_compatibility",
                                 "check_num_rank_power_of_2",
                                 "get_average_backwards_compatibility_fun"]
