"""Elastic training for Keras 3 models, shared by `horovod.tensorflow.elastic`
(TensorFlowKerasState), `horovod.tensorflow.keras.elastic` and
`horovod.keras.elastic` (KerasState and the callbacks), for either backend.

KerasModelState(model, optimizer=None, **kwargs): the model's variables
(`model.variables`: weights, non-trainable state) and the optimizer's
(`optimizer.variables`: iterations, learning rate, slots) plus plain
attributes (common ObjectState). `optimizer` defaults to `model.optimizer`
(compiled in); the model must be built. An optimizer that is not built yet
is built for `model.trainable_variables` here, so its variables exist -- the
same on every rank -- before the first save and sync.
- save(): numpy copies of every variable (in memory); restore(): assigned back;
- sync(): collective: every variable gets rank 0's value (the backend's
  broadcast_variables), then saves; then rank 0's saved plain attributes.
Subclasses bind a `Binding` (the adapter's collectives) as `_binding`.

Callbacks (Keras 3 `keras.callbacks.Callback`, either backend), upstream's:
- CommitStateCallback(state, batches_per_commit=1): `state.commit()` every
  batches_per_commit training batches and once after each epoch (one commit
  when both fall together). Each commit runs once every callback has
  finished with that batch or epoch (at the next batch's or epoch's begin,
  or at the end of training), so it holds the batch and epoch that the
  Update*StateCallbacks just wrote, whatever the order of the callbacks
  (upstream committed in on_*_end, before them in its documented order).
- UpdateBatchStateCallback(state): `state.batch` = index of the last
  finished batch of the epoch, 0 after an epoch. Keras 3 runs every epoch for
  its full steps_per_epoch whatever a callback writes to `self.params`, so
  unlike upstream the first epoch after a reset is not shortened here; skip
  already-seen data in the dataset (state.batch says where) if needed.
- UpdateEpochStateCallback(state): `state.epoch` = number of finished epochs,
  counted across resets. Both ways of resuming work (upstream horovod#2844
  double-counted the first): `model.fit(epochs=epochs - state.epoch)` (Keras
  counts from 0) and `model.fit(initial_epoch=state.epoch, epochs=epochs)`
  (Keras counts from state.epoch): the first epoch of each fit() is taken as
  epoch `state.epoch`.
"""
from collections import namedtuple

import keras
import numpy as np

from horovod_accel.common import elastic as _common

# The adapter's collectives, all blocking and collective:
# broadcast_variables(variables, root_rank), broadcast_object(obj, root_rank=0),
# allgather_object(obj) -> list, rank() -> int.
Binding = namedtuple("Binding", "broadcast_variables broadcast_object allgather_object rank")


def _variables(obj):
    """obj.variables as a list (a property in Keras 3, a method in Keras 2)."""
    if obj is None:
        return []
    v = obj.variables
    return list(v() if callable(v) else v)


class KerasModelState(_common.ObjectState):
    """State of a Keras model and optimizer (module docstring)."""

    _binding = None

    def __init__(self, model, optimizer=None, **kwargs):
        if self._binding is None:
            raise TypeError(f"{type(self).__name__} has no collectives bound; use "
                            f"hvd.elastic.KerasState or TensorFlowKerasState.")
        if not getattr(model, "built", True):
            raise ValueError("Model must be built first. Run `model.build(input_shape)` (or call "
                             "it on a batch) before creating the elastic state.")
        self.model = model
        self.optimizer = optimizer if optimizer is not None else getattr(model, "optimizer", None)
        if self.optimizer is not None and not getattr(self.optimizer, "built", True):
            self.optimizer.build(model.trainable_variables)
        self._save_model()
        binding = self._binding
        super().__init__(binding.broadcast_object, binding.rank, binding.allgather_object,
                         **kwargs)

    def _tracked(self):
        return _variables(self.model) + _variables(self.optimizer)

    def _save_model(self):
        self._saved_values = [np.array(keras.ops.convert_to_numpy(v), copy=True)
                              for v in self._tracked()]

    def _load_model(self):
        variables = self._tracked()
        if len(variables) != len(self._saved_values):
            raise RuntimeError(f"{type(self).__name__}: the model and optimizer now have "
                               f"{len(variables)} variables, {len(self._saved_values)} were "
                               f"saved; create the state after building both (or commit again).")
        for var, value in zip(variables, self._saved_values):
            var.assign(value)

    def save(self):
        self._save_model()
        super().save()

    def restore(self):
        self._load_model()
        super().restore()

    def sync(self):
        self._binding.broadcast_variables(self._tracked(), 0)
        self._save_model()
        super().sync()


class CommitStateCallback(keras.callbacks.Callback):
    """Commits `state` every `batches_per_commit` batches and after each epoch
    (each commit once every callback has finished with that batch or epoch)."""

    def __init__(self, state, batches_per_commit=1):
        super().__init__()
        if batches_per_commit < 1:
            raise ValueError(f"batches_per_commit must be >= 1, got {batches_per_commit}.")
        self.state = state
        self.batches_per_commit = batches_per_commit
        self.batches_remaining = batches_per_commit
        self._commit_pending = False

    def on_train_begin(self, logs=None):
        # The same on every rank after each reset.
        self.batches_remaining = self.batches_per_commit
        self._commit_pending = False

    def on_train_batch_end(self, batch, logs=None):
        self.batches_remaining -= 1
        if self.batches_remaining == 0:
            self.batches_remaining = self.batches_per_commit
            self._commit_pending = True

    def on_epoch_end(self, epoch, logs=None):
        self._commit_pending = True

    # The pending commit runs at the next event, after the other callbacks'
    # on_*_end of the same batch or epoch.
    def on_train_batch_begin(self, batch, logs=None):
        self._flush()

    def on_epoch_begin(self, epoch, logs=None):
        self._flush()

    def on_train_end(self, logs=None):
        self._flush()

    def _flush(self):
        if self._commit_pending:
            self._commit_pending = False
            self.commit()

    def commit(self):
        self.state.commit()


class UpdateBatchStateCallback(keras.callbacks.Callback):
    """Keeps `state.batch` at the last finished batch of the epoch (0 after it)."""

    def __init__(self, state):
        super().__init__()
        self.state = state

    def on_train_batch_end(self, batch, logs=None):
        self.state.batch = batch

    def on_epoch_end(self, epoch, logs=None):
        self.state.batch = 0


class UpdateEpochStateCallback(keras.callbacks.Callback):
    """Keeps `state.epoch` at the number of finished epochs, across resets."""

    def __init__(self, state):
        super().__init__()
        self.state = state
        self.initial_epoch = state.epoch
        self._first_keras_epoch = None

    def on_train_begin(self, logs=None):
        self.initial_epoch = self.state.epoch
        self._first_keras_epoch = None

    def on_epoch_begin(self, epoch, logs=None):
        if self._first_keras_epoch is None:
            self._first_keras_epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        first = epoch if self._first_keras_epoch is None else self._first_keras_epoch
        self.state.epoch = self.initial_epoch + (epoch - first) + 1
