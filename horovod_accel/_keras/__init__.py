"""The Keras 3 implementation shared by `horovod.tensorflow.keras` and
`horovod.keras` (upstream keeps it in `horovod/_keras/`): the
DistributedOptimizer wrapper, the callbacks and load_model, written against
Keras 3's backend-neutral API. A `KerasBackend` (backend.py) supplies what
depends on the backend's tensors: gradient reduction, value collectives and
variable broadcasts -- horovod_accel.tensorflow for KERAS_BACKEND=tensorflow,
horovod_accel.torch for KERAS_BACKEND=torch."""
