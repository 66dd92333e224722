"""KerasEstimator's training function: `train(spec)` runs in every rank of
the horovod.spark.run job and returns, on rank 0, the final checkpoint
({"epochs", "history", "state": model bytes}), None elsewhere.

A rank: init Horovod (horovod.keras: the Keras backend of KERAS_BACKEND);
load the compiled model (or the checkpoint to resume) with hvd.load_model,
which wraps its optimizer in a DistributedOptimizer keeping its state; scale
the learning rate by size; model.fit over its own shard (DataSpec) from the
first epoch not yet done (initial_epoch), the same number of steps per epoch
on every rank, with upstream's callbacks: BroadcastGlobalVariablesCallback
(rank 0's weights), MetricAverageCallback (logs averaged over ranks), the
user's callbacks, and on rank 0 the checkpoint (checkpoint.py) after every
epoch. History: {metric: [value per epoch]}, over all fits of the run.
"""
import multiprocessing
from dataclasses import dataclass

import numpy as np

from horovod_accel.spark.common.training import DataSpec, RunFiles
from horovod_accel.spark.keras import checkpoint as ckpt_mod


@dataclass
class TrainSpec:
    model: bytes                 # the compiled model or the checkpoint to resume (Keras file)
    first_epoch: int             # epochs already done (0 for a new run)
    history: dict                # their metrics
    custom_objects: dict
    callbacks: list
    gradient_compression: object
    epochs: int
    use_gpu: bool
    random_seed: object
    mp_start_method: object
    verbose: int
    data: DataSpec
    run: RunFiles


def train(spec):
    if spec.mp_start_method:
        multiprocessing.set_start_method(spec.mp_start_method, force=True)
    import keras  # noqa: PLC0415

    import horovod.keras as hvd  # noqa: PLC0415
    hvd.init()
    _place(keras, hvd, spec.use_gpu)
    if spec.random_seed is not None:
        keras.utils.set_random_seed(spec.random_seed)
    kwargs = {"compression": spec.gradient_compression} if spec.gradient_compression else {}
    with keras.utils.custom_object_scope(spec.custom_objects or {}):
        model = ckpt_mod.load_model(spec.model, hvd.load_model,
                                    custom_objects=spec.custom_objects or {}, **kwargs)
    ckpt_mod.scale_lr(model, hvd.size())
    history = {k: list(v) for k, v in (spec.history or {}).items()}
    callbacks = [hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                 hvd.callbacks.MetricAverageCallback(), *(spec.callbacks or [])]
    if hvd.rank() == 0:
        callbacks.append(_checkpoint_callback(keras, spec.run, history, hvd.size()))
    data = spec.data
    train_batches, train_sizes = data.train_batches(hvd.rank(), hvd.size(), spec.first_epoch)
    fit_kwargs = {}
    val = data.val_batches(hvd.rank(), hvd.size())
    if val is not None:
        val_batches, val_sizes = val
        fit_kwargs = {"validation_data": _stream(val_batches, val_sizes, data, model),
                      "validation_steps": len(val_sizes)}
    model.fit(_stream(train_batches, train_sizes, data, model), steps_per_epoch=len(train_sizes),
              epochs=spec.epochs, initial_epoch=spec.first_epoch, callbacks=callbacks,
              shuffle=False,   # the stream is shuffled already
              verbose=spec.verbose if hvd.rank() == 0 else 0, **fit_kwargs)
    if hvd.rank() != 0:
        return None
    return {"epochs": spec.epochs, "history": history,
            "state": ckpt_mod.model_bytes(model, hvd.size())}


def _place(keras, hvd, use_gpu):
    """TensorFlow backend: the rank sees one GPU (the one Spark gave its
    task, else local_rank's) when use_gpu, none otherwise. Other backends
    choose their device themselves."""
    if keras.backend.backend() != "tensorflow":
        return
    import tensorflow as tf  # noqa: PLC0415

    from horovod_accel.spark.task import get_available_devices  # noqa: PLC0415
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return
    if not use_gpu:
        tf.config.set_visible_devices([], "GPU")
        return
    assigned = get_available_devices()
    gpu = gpus[int(assigned[0]) if assigned else hvd.local_rank()]
    tf.config.experimental.set_memory_growth(gpu, True)
    tf.config.set_visible_devices(gpu, "GPU")


def _stream(batches, sizes, data, model):
    """Endless (inputs, labels[, sample weights]) batches for model.fit:
    epoch after epoch of `sizes`; inputs reshaped to the model's inputs,
    every array in Keras' floatx."""
    import keras  # noqa: PLC0415
    shapes = [[-1, *t.shape[1:]] for t in model.inputs]
    dtype = keras.backend.floatx()

    def pack(values):
        return values[0] if len(values) == 1 else tuple(values)

    while True:
        for n in sizes:
            batch = batches.take(n)
            xs = [np.asarray(batch[c], dtype=dtype).reshape(s)
                  for c, s in zip(data.feature_cols, shapes)]
            ys = [np.asarray(batch[c], dtype=dtype) for c in data.label_cols]
            if data.sample_weight_col:
                yield pack(xs), pack(ys), np.asarray(batch[data.sample_weight_col], dtype=dtype)
            else:
                yield pack(xs), pack(ys)


def _checkpoint_callback(keras, run, history, size):
    """Rank 0's callback: after every epoch, the epoch's (averaged) logs
    appended to `history` and the checkpoint written (checkpoint.py)."""

    class Checkpoint(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            for name, value in (logs or {}).items():
                history.setdefault(name, []).append(float(value))
            if run.checkpoint is None:
                return
            model_path, progress_path = ckpt_mod.paths(run.store, run.run_id)
            run.write(model_path, ckpt_mod.model_bytes(self.model, size))
            run.write(progress_path, ckpt_mod.progress_bytes(epoch + 1, history))
            run.write_history(history)

    return Checkpoint()
