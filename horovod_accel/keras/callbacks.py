"""horovod.keras.callbacks: the Keras 3 callbacks for the active
KERAS_BACKEND (implementation in horovod_accel/_keras/callbacks.py)."""
import keras as _keras

from horovod_accel._keras.callbacks import make_callbacks as _make_callbacks

if _keras.backend.backend() == "torch":
    from horovod_accel.keras.torch_backend import BACKEND as _BACKEND
else:
    from horovod_accel.tensorflow.keras.backend import BACKEND as _BACKEND

globals().update(_make_callbacks(_BACKEND))
