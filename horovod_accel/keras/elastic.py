"""`horovod.keras.elastic` (`hvd.elastic` of `import horovod.keras as hvd`):
elastic training for Keras 3 on the active KERAS_BACKEND.

- tensorflow: exactly horovod.tensorflow.keras.elastic;
- torch: KerasState over the torch adapter's collectives (model and
  optimizer variables broadcast from rank 0 by horovod_accel.torch), with
  run and ObjectState of horovod.torch.elastic (torch ops raise
  HorovodInternalError themselves).
The callbacks are the shared Keras 3 ones (horovod_accel/_keras/elastic.py).
"""
import keras as _keras

from horovod_accel._keras.elastic import (CommitStateCallback, UpdateBatchStateCallback,
                                          UpdateEpochStateCallback)

if _keras.backend.backend() == "torch":
    from horovod_accel._keras.elastic import Binding as _Binding
    from horovod_accel._keras.elastic import KerasModelState as _KerasModelState
    from horovod_accel.keras.torch_backend import BACKEND as _BACKEND
    from horovod_accel.torch.elastic import ObjectState, run
    from horovod_accel.torch.functions import allgather_object as _allgather_object
    from horovod_accel.torch.functions import broadcast_object as _broadcast_object
    from horovod_accel.torch.mpi_ops import rank as _rank

    class KerasState(_KerasModelState):
        """State of a Keras model and optimizer.

        Args:
            model: a built Keras model.
            optimizer: optional; default: the model's compiled optimizer.
            kwargs: further attributes, synced as plain objects.
        """

        _binding = _Binding(_BACKEND.broadcast_variables, _broadcast_object, _allgather_object,
                            _rank)

        def __init__(self, model, optimizer=None, **kwargs):
            super().__init__(model, optimizer=optimizer, **kwargs)
else:
    from horovod_accel.tensorflow.keras.elastic import KerasState, ObjectState, run

__all__ = ["CommitStateCallback", "KerasState", "ObjectState", "UpdateBatchStateCallback",
           "UpdateEpochStateCallback", "run"]
