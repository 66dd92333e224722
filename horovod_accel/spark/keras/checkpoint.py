"""KerasEstimator's checkpoint: two files in runs/<run_id>/, written by rank
0 after every epoch, in this order:
  <checkpoint filename>.keras   the model (Keras 3's format: architecture,
                                weights, compiled optimizer and its state),
                                learning rate of ONE process
  <checkpoint filename>.json    {"epochs": epochs completed, "history":
                                {metric: [value per epoch]}}
The .json is the commit: a run resumes after json["epochs"] epochs from the
.keras file (Keras 3 saves only to names ending in .keras, so upstream's
`checkpoint` file name gets the suffix). Model bytes <-> Keras models here
too.
"""
import json
import os
import posixpath
import tempfile

from horovod_accel.spark.common.training import Checkpoint


def paths(store, run_id):
    """(model file, progress file) of the run, full paths."""
    base = posixpath.join(store.get_checkpoint_path(run_id), store.get_checkpoint_filename())
    return base + ".keras", base + ".json"


def load(store, run_id):
    """The run's Checkpoint (state: the model file's bytes), or None."""
    model_path, progress_path = paths(store, run_id)
    if not (store.exists(progress_path) and store.exists(model_path)):
        return None
    progress = json.loads(store.read(progress_path))
    return Checkpoint(int(progress["epochs"]), progress["history"], store.read(model_path))


def progress_bytes(epochs, history):
    return json.dumps({"epochs": int(epochs), "history": history}).encode("utf-8")


def model_bytes(model, lr_divisor=1.0):
    """The model saved in Keras 3's format, as bytes; the optimizer's
    learning rate divided by lr_divisor in the file (a LearningRateSchedule
    is saved as it is). The model is left as it was."""
    optimizer = getattr(model, "optimizer", None)
    scaled = _plain_lr(optimizer) and lr_divisor != 1.0
    if scaled:
        lr = _lr(optimizer)
        optimizer.learning_rate = lr / lr_divisor
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.keras")
            model.save(path)
            with open(path, "rb") as f:
                return f.read()
    finally:
        if scaled:
            optimizer.learning_rate = lr


def load_model(data, load_fn, **kwargs):
    """The model of bytes from model_bytes, through load_fn(path, **kwargs)
    (keras.models.load_model or hvd.load_model)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.keras")
        with open(path, "wb") as f:
            f.write(data)
        return load_fn(path, **kwargs)


def scale_lr(model, factor):
    """Multiplies the optimizer's learning rate by factor (not a schedule's)."""
    optimizer = model.optimizer
    if _plain_lr(optimizer):
        optimizer.learning_rate = _lr(optimizer) * factor


def _lr(optimizer):
    import keras  # noqa: PLC0415
    return float(keras.ops.convert_to_numpy(optimizer.learning_rate))


def _plain_lr(optimizer):
    """True if the optimizer's learning rate is a variable (not a schedule)."""
    if optimizer is None:
        return False
    from keras.optimizers.schedules import LearningRateSchedule  # noqa: PLC0415
    return not isinstance(getattr(optimizer, "_learning_rate", None), LearningRateSchedule)
