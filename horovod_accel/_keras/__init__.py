"""Private: the backend-neutral Keras 3 code behind both public Keras packages,
imported by them (horovod_accel/tensorflow/keras/, horovod_accel/keras/) and
by horovod_accel/tensorflow's elastic.py and gradient_tape.py, never by users
(upstream keeps it in `horovod/_keras/`).

It holds the DistributedOptimizer wrapper, the callbacks and load_model,
written against Keras 3's backend-neutral API. A `KerasBackend` (backend.py)
supplies what depends on the backend's tensors: gradient reduction, value
collectives and variable broadcasts -- horovod_accel.tensorflow for
KERAS_BACKEND=tensorflow, horovod_accel.torch for KERAS_BACKEND=torch."""
