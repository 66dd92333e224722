"""Upstream's `horovod.keras` for Keras 3, imported by users
(`import horovod.keras as hvd`): the TensorFlow or the PyTorch Keras API,
whichever KERAS_BACKEND selects.

Keras 3 is multi-backend, so this package follows KERAS_BACKEND (read when
it is imported): "tensorflow" (the default) gives exactly
horovod.tensorflow.keras; "torch" gives the same API over the PyTorch
adapter (horovod_accel.torch: basics, gradient reduction, broadcasts), with
no TensorFlow needed. Other backends raise ImportError.
"""
import keras as _keras

_BACKEND_NAME = _keras.backend.backend()

if _BACKEND_NAME == "tensorflow":
    from horovod_accel.tensorflow.keras import *  # noqa: F401,F403
    from horovod_accel.tensorflow.keras import callbacks, elastic  # noqa: F401
elif _BACKEND_NAME == "torch":
    from horovod_accel.keras.torch_api import *  # noqa: F401,F403
    from horovod_accel.keras import callbacks, elastic  # noqa: F401
else:
    raise ImportError(f"horovod.keras supports KERAS_BACKEND=tensorflow or torch, not "
                      f"{_BACKEND_NAME!r}; set KERAS_BACKEND before importing keras.")
