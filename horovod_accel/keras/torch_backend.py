"""The KerasBackend of horovod.keras under KERAS_BACKEND=torch: Keras 3
trains with torch tensors, so gradients and values go through
horovod_accel.torch (no TensorFlow needed)."""
import numpy as np
import torch

import horovod_accel.torch as hvd_torch
from horovod_accel._keras.backend import KerasBackend
from horovod_accel.common import gradient_reducer as _common


class TorchReduceOps(_common.ReduceOps):
    variable_type = "keras.Variable"

    @staticmethod
    def is_variable(x):
        return hasattr(x, "assign") and hasattr(x, "trainable")

    @staticmethod
    def is_sparse(grad):
        return grad.is_sparse

    @staticmethod
    def to_dense(grad):
        return grad.to_dense() if grad.is_sparse else grad

    @staticmethod
    def describe(grad):
        return grad.numel() * grad.element_size(), (grad.dtype, grad.device)

    @staticmethod
    def divide(grad, n):
        return grad / n

    @staticmethod
    def allreduce(tensor, device_dense, **kwargs):
        return hvd_torch.allreduce(tensor, **kwargs)

    @staticmethod
    def grouped_allreduce(tensors, device_dense, **kwargs):
        return hvd_torch.grouped_allreduce(tensors, **kwargs)

    @staticmethod
    def sparse_allreduce(grad, op, name, process_set, device_sparse):
        handle = hvd_torch.sparse_allreduce_async(grad, name=name, op=op, process_set=process_set)
        return handle()


class TorchKerasBackend(KerasBackend):
    hvd = hvd_torch

    def gradient_reducer(self, *args):
        return _common.GradientReducer(TorchReduceOps, *args)

    def aggregator(self, passes, average_aggregated_gradients, reducer):
        raise ValueError("backward_passes_per_step > 1 is not supported by horovod.keras with "
                         "KERAS_BACKEND=torch; use the optimizer's own "
                         "gradient_accumulation_steps=N (Keras 3) instead.")

    def allreduce(self, value, name, op, prescale_factor, postscale_factor, compression):
        kwargs = {} if compression is None else {"compression": compression}
        return hvd_torch.allreduce(torch.as_tensor(np.asarray(value)), name=name, op=op,
                                   prescale_factor=prescale_factor,
                                   postscale_factor=postscale_factor, **kwargs).numpy()

    def allgather(self, value, name):
        return hvd_torch.allgather(torch.as_tensor(np.asarray(value)), name=name).numpy()

    def broadcast(self, value, root_rank, name):
        return hvd_torch.broadcast(torch.as_tensor(np.asarray(value)), root_rank,
                                   name=name).numpy()

    def reducescatter(self, value, name, op):
        return hvd_torch.reducescatter(torch.as_tensor(np.asarray(value)), name=name,
                                       op=op).numpy()

    def broadcast_variables(self, variables, root_rank):
        tensors = [v.value.detach().clone() for v in variables]
        handles = [hvd_torch.broadcast_async_(t, root_rank, name=f"keras.broadcast.{i}")
                   for i, t in enumerate(tensors)]
        for v, t, h in zip(variables, tensors, handles):
            hvd_torch.synchronize(h)
            v.assign(t)


BACKEND = TorchKerasBackend()
