"""horovod_accel's TensorFlow adapter: upstream `horovod.tensorflow`
(`import horovod.tensorflow as hvd`), for TensorFlow 2.x in eager mode,
inside tf.function and in TF1 graphs (tf.compat.v1).

Layers: mpi_ops.py (the op library: ops, basics, process sets) and
op_gradients.py (their gradients, registered with TF on import), then what
this package adds above it -- reductions.py (public allreduce & co. with
compression and tf.IndexedSlices), functions.py (variable and object
broadcasts, BroadcastGlobalVariablesHook), gradient_tape.py, optimizer.py
(TF1 DistributedOptimizer), sync_batch_norm.py, util.py (upstream's
`horovod.tensorflow.util` helpers: `_executing_eagerly`, `vars_to_refs`, ...)
elastic.py (`hvd.elastic`, elastic training) and keras/ (Keras 3).
"""
from horovod_accel.tensorflow.compression import Compression
from horovod_accel.tensorflow.functions import (BroadcastGlobalVariablesHook, allgather_object,
                                                broadcast_global_variables, broadcast_object,
                                                broadcast_object_fn, broadcast_variables)
from horovod_accel.tensorflow.gradient_tape import (DistributedGradientTape,
                                                    PartialDistributedGradientTape)
from horovod_accel.tensorflow import op_gradients  # noqa: F401 -- registers the ops' gradients
from horovod_accel.tensorflow.mpi_ops import (  # noqa: F401 -- the op layer, re-exported
    Adasum, Average, HorovodInternalError, Max, Min, Product, ProcessSet, Sum, add_process_set,
    allgather, alltoall, barrier, broadcast, broadcast_, ccl_built, cross_rank, cross_size,
    cuda_built, ddl_built, global_process_set, gloo_built, gloo_enabled, grouped_allgather, init,
    is_homogeneous, is_initialized, join, local_rank, local_rank_op, local_size, local_size_op,
    mpi_built, mpi_enabled, mpi_threads_supported, nccl_built, process_set_included_op, rank,
    rank_op, remove_process_set, rocm_built, shutdown, size, size_op, start_timeline,
    stop_timeline)
from horovod_accel.tensorflow.optimizer import DistributedOptimizer
from horovod_accel.tensorflow.reductions import (allreduce, grouped_allreduce,
                                                 grouped_reducescatter, reducescatter)
from horovod_accel.tensorflow.sync_batch_norm import SyncBatchNormalization
from horovod_accel.tensorflow import util  # noqa: F401 -- `hvd.util`, as upstream
from horovod_accel.tensorflow.util import (_cache, _executing_eagerly, _make_subgraph,  # noqa: F401
                                           refs_to_vars, vars_to_refs)
from horovod_accel.tensorflow import elastic  # noqa: E402,F401 -- `hvd.elastic`, as upstream
