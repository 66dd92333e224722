"""`horovod.tensorflow.elastic` (`hvd.elastic` of `import horovod.tensorflow as
hvd`): elastic training for TensorFlow 2 (eager).

- run(func): the elastic retry loop (horovod_accel/common/elastic.py) with
  reset = `shutdown(); init()`. Our TensorFlow ops report a failed
  collective as TensorFlow errors (mpi_ops.py): a lost peer or a shutdown
  under this rank -> tf.errors.AbortedError, after which the core's
  generation has ended (every later op fails too). run() turns exactly
  those into HorovodInternalError (so the loop restores and resets): a
  tf.errors.OpError raised while the runtime reports its generation ended,
  or an Aborted/Unavailable/Unknown error naming one of our ops
  (`Horovod<Op>`). Every other exception propagates unchanged (upstream
  returned None for an UnknownError that named no Horovod op). The same
  translation covers the states' own collectives (sync, commit), which the
  loop runs outside `func`.
- ObjectState(**kwargs): plain attributes, synced with TF's object collectives.
- TensorFlowKerasState(model, optimizer=None, backend=None, **kwargs): a
  Keras 3 model and optimizer, in memory (horovod_accel/_keras/elastic.py);
  `backend` (upstream's TF1 session source) is accepted and ignored.
- TensorFlowState(variables=None, session=None, **kwargs): a list of
  tf.Variables (TF2 eager). `variables` is required (TF2 has no global
  variable collection); `session` must be None (TF1 sessions are not
  supported). save() keeps numpy copies, restore() assigns them, sync()
  broadcasts rank 0's values.
"""
import functools
import re

import numpy as np
import tensorflow as tf

from horovod_accel._keras.elastic import Binding, KerasModelState
from horovod_accel.common import elastic as _common
from horovod_accel.common.default_runtime import DEFAULT_RUNTIME
from horovod_accel.common.exceptions import HorovodInternalError
from horovod_accel.tensorflow.functions import (allgather_object, broadcast_object,
                                                broadcast_variables)
from horovod_accel.tensorflow.mpi_ops import init, rank, shutdown

_HOROVOD_OP = re.compile(r"\bHorovod[A-Z][A-Za-z]*")
_OP_FAILURES = (tf.errors.AbortedError, tf.errors.UnavailableError, tf.errors.UnknownError)


def _generation_ended():
    return DEFAULT_RUNTIME.is_initialized() and DEFAULT_RUNTIME.runtime().generation_ended()


def is_horovod_failure(error):
    """True if `error` (an exception) is a collective failure of Horovod's
    TensorFlow ops that elastic training recovers from."""
    if not isinstance(error, tf.errors.OpError):
        return False
    if _generation_ended():
        return True
    return isinstance(error, _OP_FAILURES) and bool(_HOROVOD_OP.search(error.message or ""))


def _translating(fn):
    """fn, with Horovod's TF collective failures raised as HorovodInternalError."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except tf.errors.OpError as e:
            if is_horovod_failure(e):
                raise HorovodInternalError(str(e)) from e
            raise

    return wrapper


def run(func):
    """Decorator: runs `func(state, *args, **kwargs)` elastically (module
    docstring). Returns func's return value."""
    return _common.run_fn(_translating(func), _reset)


def _reset():
    shutdown()
    init()


_bcast_object = _translating(broadcast_object)
_allgather_object = _translating(allgather_object)


@_translating
def _broadcast_variables(variables, root_rank):
    broadcast_variables(variables, root_rank=root_rank)


_BINDING = Binding(_broadcast_variables, _bcast_object, _allgather_object, rank)


class ObjectState(_common.ObjectState):
    """Plain Python attributes (`ObjectState(epoch=0, batch=0)`), synced
    with TF's object collectives. bcast_object / get_rank may still be
    given, as with upstream's common ObjectState."""

    def __init__(self, bcast_object=None, get_rank=None, **kwargs):
        super().__init__(bcast_object or _bcast_object, get_rank or rank, _allgather_object,
                         **kwargs)


class TensorFlowKerasState(KerasModelState):
    """State of a Keras model and optimizer (horovod_accel/_keras/elastic.py).

    Args:
        model: a built Keras model.
        optimizer: optional; default: the model's compiled optimizer.
        backend: accepted for upstream compatibility (TF1 only); ignored.
        kwargs: further attributes, synced as plain objects.
    """

    _binding = _BINDING

    def __init__(self, model, optimizer=None, backend=None, **kwargs):
        self.backend = backend
        super().__init__(model, optimizer=optimizer, **kwargs)


class TensorFlowState(_common.ObjectState):
    """State of a list of tf.Variables plus plain attributes (module docstring)."""

    def __init__(self, variables=None, session=None, **kwargs):
        if session is not None or not tf.executing_eagerly():
            raise ValueError("TensorFlowState supports TensorFlow 2 eager execution only: pass "
                             "session=None and create it outside tf.function / TF1 graphs.")
        if variables is None:
            raise ValueError("TensorFlowState needs variables=[...] (the tf.Variables to track): "
                             "TensorFlow 2 has no global variable collection.")
        self.variables = list(variables)
        self.session = None
        self._save_model()
        super().__init__(_bcast_object, rank, _allgather_object, **kwargs)

    def _save_model(self):
        self._values = [np.array(var.numpy(), copy=True) for var in self.variables]

    def save(self):
        self._save_model()
        super().save()

    def restore(self):
        for var, value in zip(self.variables, self._values):
            var.assign(value)
        super().restore()

    def sync(self):
        _broadcast_variables(self.variables, 0)
        self._save_model()
        super().sync()


__all__ = ["ObjectState", "TensorFlowKerasState", "TensorFlowState", "run"]
