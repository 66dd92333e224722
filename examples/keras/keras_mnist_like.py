"""Data-parallel Keras 3 model.fit on handwritten digits
(`import horovod.tensorflow.keras as hvd`): hvd.DistributedOptimizer around
a Keras optimizer, plus the Horovod callbacks.

The data is scikit-learn's digits set (shipped inside the package: nothing
is downloaded), split 80/20 with a fixed seed; each rank fits on every
size()-th training sample. Rank 0 prints progress, saves a checkpoint per
epoch (with --checkpoint-dir) and the final test accuracy; a restarted job
resumes from the newest checkpoint (hvd.load_model on rank 0, then the
broadcast callback hands the model and optimizer state to the others).

    horovodrun -np 2 python examples/keras/keras_mnist_like.py

Exits non-zero if the test accuracy is not above --min-accuracy (0.9).
"""
import argparse
import glob
import os
import re
import sys

import keras
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import horovod.tensorflow.keras as hvd


def parse_args():
    p = argparse.ArgumentParser(description="Keras digits example (model.fit)")
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--lr", type=float, default=0.002, help="learning rate for one rank")
    p.add_argument("--checkpoint-dir", default=None)
    p.add_argument("--min-accuracy", type=float, default=0.9)
    return p.parse_args()


def build_model(lr):
    model = keras.Sequential([
        keras.Input((64,)),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dropout(0.2),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(10, activation="softmax")])
    # Horovod: scale the learning rate by the number of ranks; wrap the optimizer.
    opt = hvd.DistributedOptimizer(keras.optimizers.Adam(lr * hvd.size()))
    model.compile(optimizer=opt, loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def newest_checkpoint(directory):
    found = [(int(re.search(r"(\d+)\.keras$", f).group(1)), f)
             for f in glob.glob(os.path.join(directory or "", "checkpoint-*.keras"))]
    return max(found) if found else (0, None)


def main():
    args = parse_args()
    hvd.init()
    keras.utils.set_random_seed(hvd.rank())
    digits = load_digits()
    data = digits.data.astype("float32") / 16.0
    x_train, x_test, y_train, y_test = train_test_split(data, digits.target, test_size=0.2,
                                                        random_state=42)
    x_train, y_train = x_train[hvd.rank()::hvd.size()], y_train[hvd.rank()::hvd.size()]

    # Horovod: the newest epoch is agreed on by broadcast (rank 0 sees the files).
    resume_epoch, path = newest_checkpoint(args.checkpoint_dir) if hvd.rank() == 0 else (0, None)
    resume_epoch = int(hvd.broadcast(np.array(resume_epoch), 0, name="resume_epoch"))
    model = build_model(args.lr)
    if resume_epoch and hvd.rank() == 0:
        model = hvd.load_model(path)
        print(f"resumed from epoch {resume_epoch}", flush=True)

    callbacks = [
        # Horovod: start every rank from rank 0's state (fresh or restored).
        hvd.callbacks.BroadcastGlobalVariablesCallback(0),
        # Horovod: report metrics averaged over all ranks.
        hvd.callbacks.MetricAverageCallback(),
        # Horovod: ramp the learning rate up over the first epochs.
        hvd.callbacks.LearningRateWarmupCallback(initial_lr=args.lr * hvd.size(),
                                                 warmup_epochs=2),
    ]
    if hvd.rank() == 0 and args.checkpoint_dir:
        os.makedirs(args.checkpoint_dir, exist_ok=True)
        callbacks.append(keras.callbacks.ModelCheckpoint(
            os.path.join(args.checkpoint_dir, "checkpoint-{epoch}.keras")))
    model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs,
              initial_epoch=resume_epoch, callbacks=callbacks,
              verbose=2 if hvd.rank() == 0 else 0)

    _, accuracy = model.evaluate(x_test, y_test, verbose=0)
    if hvd.rank() == 0:
        print(f"final test accuracy {100 * accuracy:.2f}%", flush=True)
    return 0 if accuracy > args.min_accuracy else 1


if __name__ == "__main__":
    sys.exit(main())
