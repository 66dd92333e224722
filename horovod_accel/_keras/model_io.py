"""hvd.load_model for Keras 3 (upstream `horovod/_keras/__init__.py`
load_model): loads a saved model and wraps its optimizer, with the state
it was saved with, in a DistributedOptimizer."""
import keras

from horovod_accel._keras import optimizer as _optimizer


def load_model(backend, filepath, custom_optimizers, custom_objects, compression, legacy_opts):
    """keras.models.load_model(filepath) with the model's optimizer turned
    into a DistributedOptimizer that keeps its restored variables (Adam
    moments, iterations, learning rate).

    custom_optimizers: optimizer classes the saved model may use that Keras
    does not know (added to custom_objects under their class names).
    custom_objects: passed to Keras. compression: the wrapper's compression.
    legacy_opts: Keras 2's legacy optimizers do not exist in Keras 3
    (ValueError if True).
    """
    if legacy_opts:
        raise ValueError("legacy_opts=True asks for Keras 2 legacy optimizers, which Keras 3 "
                         "does not have; load with legacy_opts=False.")
    objects = dict(custom_objects or {})
    for cls in custom_optimizers or []:
        objects.setdefault(cls.__name__, cls)
    model = keras.models.load_model(filepath, custom_objects=objects)
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None or _optimizer.is_distributed(optimizer):
        return model
    wrap_in_place(backend, optimizer, compression)
    return model


def wrap_in_place(backend, optimizer, compression):
    """Turns a (built, restored) Keras optimizer into a DistributedOptimizer
    in place, keeping every variable: its class becomes the wrapped class."""
    hvd = backend.hvd
    reducer = backend.gradient_reducer(
        f"Distributed{type(optimizer).__name__}", '', '', compression,
        False, hvd.Average, 1.0, None, hvd.global_process_set, True)
    optimizer.__class__ = _optimizer.wrap_class(optimizer.__class__)
    optimizer._hvd_setup(backend, reducer, 1, False)
    return optimizer
