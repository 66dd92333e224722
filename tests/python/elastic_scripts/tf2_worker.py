"""An elastic TensorFlow 2 / Keras 3 worker for the launcher's elastic tests:

    tf2_worker.py tape   TensorFlowKerasState + a DistributedGradientTape step
                         in a tf.function (traced once, before any resize)
    tf2_worker.py fit    KerasState + model.fit with CommitStateCallback,
                         UpdateBatchStateCallback and UpdateEpochStateCallback

Failures come from the schedule (_schedule.py) at (epoch, batch). Every
worker logs {"w", "round", "epoch", "size", "loss"} at the end of each epoch;
rank 0 prints DONE with the size it finished at.
"""
import os
import sys

import keras
import numpy as np
import tensorflow as tf

from _schedule import SCHED, WID, inject_failures, log

MODE = sys.argv[1]
if MODE == "fit":
    import horovod.tensorflow.keras as hvd
else:
    import horovod.tensorflow as hvd

BATCH = 8


def data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype("float32")
    return x, x @ np.array([[1.0], [-2.0], [3.0], [0.5]], dtype="float32")


def log_epoch(epoch, loss):
    log(w=WID, round=int(os.environ.get("_HOROVOD_ELASTIC_ROUND", "0")), epoch=int(epoch),
        size=hvd.size(), loss=float(loss))


def train_tape(model, x, y):
    opt = keras.optimizers.SGD(0.05)
    state = hvd.elastic.TensorFlowKerasState(model, opt, epoch=0, batch=0)
    batches = len(x) // BATCH

    @tf.function
    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(xb) - yb) ** 2)
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    @hvd.elastic.run
    def train(state):
        while state.epoch < SCHED["epochs"]:
            while state.batch < batches:
                inject_failures(state.epoch, state.batch, hvd.rank())
                lo = state.batch * BATCH
                loss = step(x[lo:lo + BATCH], y[lo:lo + BATCH])
                state.batch += 1
                state.commit()
            log_epoch(state.epoch, loss)
            state.epoch += 1
            state.batch = 0
            state.commit()

    train(state)


def train_fit(model, x, y):
    model.compile(loss="mse", optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.05)))
    state = hvd.elastic.KerasState(model, epoch=0, batch=0)

    class Inject(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            inject_failures(state.epoch, batch, hvd.rank())

        def on_epoch_end(self, epoch, logs=None):
            log_epoch(epoch, logs["loss"])

    callbacks = [hvd.elastic.CommitStateCallback(state),
                 hvd.elastic.UpdateBatchStateCallback(state),
                 hvd.elastic.UpdateEpochStateCallback(state), Inject()]

    @hvd.elastic.run
    def train(state):
        model.fit(x, y, batch_size=BATCH, epochs=SCHED["epochs"], initial_epoch=state.epoch,
                  callbacks=callbacks, verbose=0, shuffle=False)

    train(state)


def main():
    hvd.init()
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    x, y = data()
    (train_fit if MODE == "fit" else train_tape)(model, x, y)
    if hvd.rank() == 0:
        print(f"DONE size={hvd.size()}", flush=True)


if __name__ == "__main__":
    main()
