"""`horovod.tensorflow.keras.elastic` (`hvd.elastic` of `import
horovod.tensorflow.keras as hvd`): elastic training for Keras 3 on the
TensorFlow backend. KerasState(model, optimizer=None, **kwargs) is
TensorFlowKerasState; the callbacks are the shared Keras 3 ones
(horovod_accel/_keras/elastic.py); run and ObjectState are
horovod.tensorflow.elastic's (TF collective failures -> HorovodInternalError).
"""
from horovod_accel._keras.elastic import (CommitStateCallback, UpdateBatchStateCallback,
                                          UpdateEpochStateCallback)
from horovod_accel.tensorflow.elastic import ObjectState, TensorFlowKerasState, run


class KerasState(TensorFlowKerasState):
    """State of a Keras model and optimizer.

    Args:
        model: a built Keras model.
        optimizer: optional; default: the model's compiled optimizer.
        kwargs: further attributes, synced as plain objects.
    """

    def __init__(self, model, optimizer=None, **kwargs):
        super().__init__(model, optimizer=optimizer, **kwargs)


__all__ = ["CommitStateCallback", "KerasState", "ObjectState", "UpdateBatchStateCallback",
           "UpdateEpochStateCallback", "run"]
