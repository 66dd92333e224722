"""Keras 3 callbacks of horovod.tensorflow.keras (upstream
`horovod.tensorflow.keras.callbacks`); implementation in
horovod_accel/_keras/callbacks.py."""
from horovod_accel._keras.callbacks import make_callbacks
from horovod_accel.tensorflow.keras.backend import BACKEND

_classes = make_callbacks(BACKEND)
BroadcastGlobalVariablesCallback = _classes["BroadcastGlobalVariablesCallback"]
MetricAverageCallback = _classes["MetricAverageCallback"]
LearningRateScheduleCallback = _classes["LearningRateScheduleCallback"]
LearningRateWarmupCallback = _classes["LearningRateWarmupCallback"]
BestModelCheckpoint = _classes["BestModelCheckpoint"]
