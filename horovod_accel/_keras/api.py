"""The functions of horovod.tensorflow.keras / horovod.keras that are the
same for every backend, bound to a KerasBackend by `make_api(backend)`.

Their defaults are framework-neutral objects (Compression.none is the shared
NoneCompressor, Average the shared reduce-op constant, global_process_set the
one global set), so the signatures are upstream's for every backend.
"""

from horovod_accel._keras import model_io as _model_io
from horovod_accel._keras.local_layers import local_layer_list
from horovod_accel._keras.optimizer import create_distributed_optimizer
from horovod_accel.common.basics import HorovodBasics
from horovod_accel.common.compression import NoneCompressor
from horovod_accel.common.process_sets import global_process_set
from horovod_accel.common.util import get_average_backwards_compatibility_fun

Average = HorovodBasics.Average
_resolve_op = get_average_backwards_compatibility_fun(HorovodBasics)

NAMES = ["DistributedOptimizer", "PartialDistributedOptimizer", "broadcast_global_variables", "allreduce", "allgather",
         "broadcast", "reducescatter", "load_model"]


def make_api(backend):
    """{name: function} for NAMES, bound to `backend`."""

    def DistributedOptimizer(optimizer, name=None, device_dense='', device_sparse='',
                             compression=NoneCompressor, sparse_as_dense=False,
                             gradient_predivide_factor=1.0, op=Average,
                             backward_passes_per_step=1, average_aggregated_gradients=False,
                             num_groups=0, groups=None, process_set=global_process_set,
                             scale_local_gradients=True):
        """A Keras 3 optimizer that averages (op) gradients across the ranks
        of `process_set` before applying them (upstream signature); see
        horovod_accel/_keras/optimizer.py for how, and for jit_compile."""
        return create_distributed_optimizer(
            backend, optimizer, name, device_dense, device_sparse, compression, sparse_as_dense,
            gradient_predivide_factor, op, backward_passes_per_step,
            average_aggregated_gradients, num_groups, groups, process_set, scale_local_gradients)

    def PartialDistributedOptimizer(optimizer, name=None, device_dense='', device_sparse='',
                                    compression=NoneCompressor, sparse_as_dense=False,
                                    gradient_predivide_factor=1.0, op=Average, groups=None,
                                    process_set=global_process_set, local_layers=None,
                                    scale_local_gradients=True):
        """DistributedOptimizer whose gradients of the trainable weights of
        `local_layers` (a keras Layer or a list of them) are not reduced:
        each rank applies its own (divided by the set size with
        scale_local_gradients, as upstream). ValueError if an entry of
        local_layers is not a Layer."""
        local_layers = local_layer_list(local_layers)
        opt = DistributedOptimizer(
            optimizer, name=name, device_dense=device_dense, device_sparse=device_sparse,
            compression=compression, sparse_as_dense=sparse_as_dense,
            gradient_predivide_factor=gradient_predivide_factor, op=op, groups=groups,
            process_set=process_set, scale_local_gradients=scale_local_gradients)
        for layer in local_layers:
            for var in layer.trainable_weights:
                opt.register_local_var(var)
        return opt

    def broadcast_global_variables(root_rank):
        """Keras 2's TF1-session broadcast has no Keras 3 counterpart (no
        global-variable collection): raises, saying what to use instead."""
        raise RuntimeError(
            f"broadcast_global_variables() needs TF1 global variables, which Keras 3 does not "
            f"have. Use hvd.callbacks.BroadcastGlobalVariablesCallback({root_rank}) in "
            f"model.fit, or broadcast model.variables and optimizer.variables yourself "
            f"(horovod.tensorflow.broadcast_variables / horovod.torch.broadcast_parameters).")

    def allreduce(value, name=None, average=None, prescale_factor=1.0, postscale_factor=1.0,
                  op=None, compression=NoneCompressor):
        """The reduction of `value` over all ranks, as a numpy array
        (Average by default; `average` is the deprecated flag)."""
        return backend.allreduce(value, name, _resolve_op(op, average), prescale_factor,
                                 postscale_factor, compression)

    def allgather(value, name=None):
        """Every rank's `value` concatenated along dimension 0 (numpy)."""
        return backend.allgather(value, name)

    def broadcast(value, root_rank, name=None):
        """`value` of root_rank on every rank (numpy)."""
        return backend.broadcast(value, root_rank, name)

    def reducescatter(value, name=None, op=Average):
        """This rank's slice (dimension 0) of the reduction of `value` (numpy)."""
        return backend.reducescatter(value, name, op)

    def load_model(filepath, custom_optimizers=None, custom_objects=None,
                   compression=NoneCompressor, legacy_opts=False):
        """keras.models.load_model with the optimizer wrapped in a
        DistributedOptimizer that keeps its restored state."""
        return _model_io.load_model(backend, filepath, custom_optimizers, custom_objects,
                                    compression, legacy_opts)

    scope = locals()
    return {name: scope[name] for name in NAMES}
