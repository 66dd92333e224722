"""Keras 3 callbacks of horovod.tensorflow.keras / horovod.keras (upstream
`horovod/_keras/callbacks.py`), over a KerasBackend (backend.py).

Every callback that communicates is collective: give it to model.fit on
every rank, in the same position of the callback list.
"""
import keras
import numpy as np


class BroadcastGlobalVariablesCallbackImpl:
    """Broadcasts the model's weights and the optimizer's variables from
    root_rank when training starts (building the optimizer first if Keras has
    not yet; a model without weights yet -- never called -- is broadcast
    after its first batch, as upstream always did), so all ranks start from
    the same state: random initialisation or a checkpoint restored on the
    root only. Runs once per callback object (a second fit() continues
    without broadcasting).

    local_variables: variables (or a single one) left out of the broadcast.
    device: accepted for upstream compatibility.
    """

    def __init__(self, backend, root_rank, device='', local_variables=None):
        super().__init__()
        self._hvd_backend = backend
        self.root_rank = root_rank
        self.device = device
        if local_variables is None:
            local_variables = []
        elif not isinstance(local_variables, (list, tuple, set)):
            local_variables = [local_variables]
        self.local_variables = list(local_variables)
        self.broadcast_done = False

    def _variables(self):
        # model.weights, not model.variables: Keras 3 adds the compiled
        # metrics' variables to the latter, and a model restored by
        # load_model has them before fit() while a fresh one does not.
        variables = list(self.model.weights)
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None:
            variables += list(optimizer.variables)
        return [v for v in variables if not any(v is l for l in self.local_variables)]

    def _broadcast(self):
        self._hvd_backend.broadcast_variables(self._variables(), self.root_rank)
        self.broadcast_done = True

    def on_train_begin(self, logs=None):
        if self.broadcast_done or not self.model.built:
            return          # an unbuilt model has no weights yet: after the first batch
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None and not optimizer.built:
            # Keras 3 (TF backend) would build it while tracing the first
            # step; build it now so its state is broadcast before any step.
            optimizer.build(self.model.trainable_variables)
        self._broadcast()

    def on_train_batch_end(self, batch, logs=None):
        if not self.broadcast_done:
            self._broadcast()


class MetricAverageCallbackImpl:
    """At the end of every epoch, replaces each metric in `logs` with its
    average over all ranks (one allreduce of every metric, sorted by name),
    so callbacks placed after it (ReduceLROnPlateau, checkpoints, early
    stopping) and the History see global values. Every rank must log the same
    metric names. device: accepted for upstream compatibility."""

    def __init__(self, backend, device=''):
        super().__init__()
        self._hvd_backend = backend
        self.device = device

    def _average_metrics_in_place(self, logs):
        if not logs:
            return
        names = sorted(k for k, v in logs.items() if np.ndim(v) == 0)
        values = np.array([float(logs[k]) for k in names], dtype=np.float64)
        averaged = self._hvd_backend.allreduce(
            values, name="MetricAverageCallback", op=self._hvd_backend.hvd.Average,
            prescale_factor=1.0, postscale_factor=1.0, compression=None)
        for k, v in zip(names, np.asarray(averaged).tolist()):
            logs[k] = v

    def on_epoch_end(self, epoch, logs=None):
        self._average_metrics_in_place(logs)


class LearningRateScheduleCallbackImpl:
    """Sets the optimizer's learning rate to initial_lr * multiplier(epoch)
    for epochs in [start_epoch, end_epoch) (upstream semantics).

    multiplier: a number or a function of the (fractional) epoch. staircase:
    change the rate at epoch starts (True) or every batch with fractional
    epochs (False; needs steps_per_epoch, read from model.fit when None).
    momentum_correction: accepted; Keras 3 compiles the optimizer's momentum
    into the train step as a constant, so it is not adjusted (see
    docs/tensorflow_keras.md). The optimizer's learning rate must be a plain
    value (a variable), not a LearningRateSchedule.
    """

    def __init__(self, backend, initial_lr, multiplier, start_epoch=0, end_epoch=None,
                 staircase=True, momentum_correction=True, steps_per_epoch=None):
        super().__init__()
        self._hvd_backend = backend
        if initial_lr is None:
            raise ValueError("initial_lr is required: pass the learning rate the schedule starts "
                             "from (usually the optimizer's initial learning rate).")
        self.initial_lr = initial_lr
        self.start_epoch = start_epoch
        self.end_epoch = end_epoch
        self.staircase = staircase
        self.momentum_correction = momentum_correction
        self.steps_per_epoch = steps_per_epoch
        self.current_epoch = None
        if not callable(multiplier):
            self.staircase = True
            self.multiplier = lambda epoch: multiplier
        else:
            self.multiplier = multiplier

    def _autodetect_steps_per_epoch(self):
        steps = (self.params or {}).get("steps")
        if steps:
            return steps
        raise ValueError("Could not autodetect the number of steps per epoch; pass "
                         "steps_per_epoch=... to the learning rate callback (or steps_per_epoch "
                         "to model.fit).")

    def _in_range(self, epoch):
        return epoch >= self.start_epoch and (self.end_epoch is None or epoch < self.end_epoch)

    def _set_lr(self, epoch):
        optimizer = self.model.optimizer
        lr = optimizer.learning_rate
        if isinstance(optimizer._learning_rate, keras.optimizers.schedules.LearningRateSchedule):
            raise ValueError("Horovod learning rate callbacks set the optimizer's learning rate, "
                             "but it is a LearningRateSchedule; use a constant learning rate "
                             "with the callbacks, or the schedule alone.")
        new_lr = self.initial_lr * self.multiplier(epoch)
        if hasattr(lr, "assign"):
            lr.assign(new_lr)
        else:
            optimizer.learning_rate = new_lr

    def on_train_begin(self, logs=None):
        if not self.staircase and not self.steps_per_epoch:
            self.steps_per_epoch = self._autodetect_steps_per_epoch()

    def on_epoch_begin(self, epoch, logs=None):
        self.current_epoch = epoch
        if self.staircase and self._in_range(epoch):
            self._set_lr(epoch)

    def on_batch_begin(self, batch, logs=None):
        if self.staircase or not self._in_range(self.current_epoch):
            return
        self._set_lr(self.current_epoch + float(batch) / self.steps_per_epoch)

    on_train_batch_begin = on_batch_begin

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = float(np.asarray(keras.ops.convert_to_numpy(
                self.model.optimizer.learning_rate)))


class LearningRateWarmupCallbackImpl(LearningRateScheduleCallbackImpl):
    """Ramps the learning rate from initial_lr / size to initial_lr over
    warmup_epochs (per batch), upstream's gradual warm-up ("Accurate, Large
    Minibatch SGD"): lr(epoch) = initial_lr / size * (epoch * (size - 1) /
    warmup_epochs + 1). verbose=1 prints when the warm-up ends."""

    def __init__(self, backend, initial_lr, warmup_epochs=5, momentum_correction=True,
                 steps_per_epoch=None, verbose=0):
        size = backend.hvd.size()

        def multiplier(epoch):
            # Adjust epoch to produce a round 1.0 multiplier at the end of the warm-up.
            epoch += 1.0 / self.steps_per_epoch
            return 1.0 / size * (epoch * (size - 1) / warmup_epochs + 1)

        super().__init__(backend, initial_lr, multiplier, start_epoch=0, end_epoch=warmup_epochs,
                         staircase=False, momentum_correction=momentum_correction,
                         steps_per_epoch=steps_per_epoch)
        self.verbose = verbose

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        if epoch == self.end_epoch - 1 and self.verbose > 0:
            new_lr = float(np.asarray(keras.ops.convert_to_numpy(
                self.model.optimizer.learning_rate)))
            print(f"\nEpoch {epoch + 1}: finished gradual learning rate warmup to {new_lr:g}.")


class BestModelCheckpointImpl:
    """keras.callbacks.ModelCheckpoint that keeps only the best model
    (save_best_only=True). Upstream leaves filepath to be filled in later
    (Spark's KerasEstimator); Keras 3 needs it at construction, so it is an
    extra keyword here, defaulting to 'best_model.keras' ('.weights.h5' with
    save_weights_only). Add it on rank 0 only."""

    def __init__(self, monitor='val_loss', verbose=0, save_weights_only=False, mode='auto',
                 save_freq='epoch', filepath=None):
        if filepath is None:
            filepath = "best_model.weights.h5" if save_weights_only else "best_model.keras"
        super().__init__(filepath=filepath, monitor=monitor, verbose=verbose,
                         save_best_only=True, save_weights_only=save_weights_only, mode=mode,
                         save_freq=save_freq)


def make_callbacks(backend):
    """The public callback classes bound to `backend` (a dict name -> class)."""

    def bind(impl, base, doc_name):
        def __init__(self, *args, **kwargs):
            impl.__init__(self, backend, *args, **kwargs)
        return type(doc_name, (impl, base), {"__init__": __init__, "__doc__": impl.__doc__})

    cb = keras.callbacks.Callback
    classes = {
        "BroadcastGlobalVariablesCallback": bind(BroadcastGlobalVariablesCallbackImpl, cb,
                                                 "BroadcastGlobalVariablesCallback"),
        "MetricAverageCallback": bind(MetricAverageCallbackImpl, cb, "MetricAverageCallback"),
        "LearningRateScheduleCallback": bind(LearningRateScheduleCallbackImpl, cb,
                                             "LearningRateScheduleCallback"),
        "LearningRateWarmupCallback": bind(LearningRateWarmupCallbackImpl, cb,
                                           "LearningRateWarmupCallback"),
        "BestModelCheckpoint": type("BestModelCheckpoint",
                                    (BestModelCheckpointImpl, keras.callbacks.ModelCheckpoint),
                                    {"__doc__": BestModelCheckpointImpl.__doc__}),
    }
    return classes


__all__ = ["make_callbacks"]
