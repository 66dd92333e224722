"""horovod.tensorflow.elastic and horovod.tensorflow.keras.elastic under a
static 2-rank horovodrun job (every rank runs this; test_elastic_states.py
launches it once).

Checks: ObjectState / TensorFlowState / KerasState save, restore and sync;
run() turning a real collective failure of our TF ops (a peer shut down:
tf.errors.AbortedError) into HorovodInternalError -- re-raised here, outside
an elastic job -- while unrelated TF errors pass through unchanged; and
model.fit under hvd.elastic.run with the Keras callbacks and a
HostsUpdatedInterrupt raised on every rank in epoch 2: the job resets,
rank 1's deliberately different weights and attributes are replaced by
rank 0's, and fit resumes at the committed epoch both with
`initial_epoch=state.epoch` and with `epochs=epochs - state.epoch`
(upstream horovod#2844).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import horovod.tensorflow.keras as hvd  # noqa: E402
import horovod.tensorflow as hvd_tf  # noqa: E402
from horovod.common.exceptions import HorovodInternalError, HostsUpdatedInterrupt  # noqa: E402
from _checks import check, run_all  # noqa: E402


def same_everywhere(value, what):
    values = hvd_tf.allgather_object(value)
    assert all(_equal(v, values[0]) for v in values), f"{what} differs across ranks: {values}"


def _equal(a, b):
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return np.array_equal(np.asarray(a), np.asarray(b))


def make_model(seed):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3),
                              keras.layers.BatchNormalization(), keras.layers.Dense(1)])
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.Adam(0.01)), loss="mse",
                  jit_compile=False)
    return model


def weights(model):
    return [np.asarray(w) for w in model.get_weights()]


@check
def object_and_tensorflow_state():
    state = hvd_tf.elastic.ObjectState(epoch=hvd_tf.rank(), name=f"r{hvd_tf.rank()}")
    state.sync()
    assert (state.epoch, state.name) == (0, "r0"), (state.epoch, state.name)
    var = tf.Variable([float(hvd_tf.rank())] * 2)
    ts = hvd_tf.elastic.TensorFlowState([var], step=hvd_tf.rank())
    ts.sync()
    assert np.array_equal(var.numpy(), [0.0, 0.0]) and ts.step == 0
    var.assign([5.0, 6.0])
    ts.step = 1
    ts.commit()
    var.assign([7.0, 7.0])
    ts.step = 2
    ts.restore()
    assert np.array_equal(var.numpy(), [5.0, 6.0]) and ts.step == 1
    for kwargs in ({"variables": [var], "session": object()}, {}):
        try:
            hvd_tf.elastic.TensorFlowState(**kwargs)
        except ValueError:
            pass
        else:
            raise AssertionError(f"TensorFlowState({kwargs}) did not raise ValueError")


@check
def keras_state_save_restore_sync():
    model = make_model(seed=hvd.rank())
    model(np.zeros((2, 4), np.float32))
    state = hvd.elastic.KerasState(model, epoch=hvd.rank())
    assert state.optimizer is model.optimizer and state.optimizer.built
    state.sync()
    same_everywhere(weights(model), "weights after sync")
    same_everywhere([np.asarray(v) for v in model.optimizer.variables], "optimizer after sync")
    assert state.epoch == 0
    x, y = np.ones((4, 4), np.float32), np.ones((4, 1), np.float32)
    model.fit(x, y, verbose=0, batch_size=4)
    state.commit()
    saved = weights(model)
    model.fit(x, y, verbose=0, batch_size=4)
    state.epoch = 5
    assert not _equal(weights(model), saved)
    state.restore()
    assert _equal(weights(model), saved) and state.epoch == 0
    assert int(model.optimizer.iterations.numpy()) == 1
    unbuilt = keras.Sequential([keras.layers.Dense(1)])
    try:
        hvd.elastic.KerasState(unbuilt)
    except ValueError as e:
        assert "built" in str(e)
    else:
        raise AssertionError("KerasState of an unbuilt model did not raise")


@check
def run_translates_only_horovod_failures():
    calls = []

    @hvd_tf.elastic.run
    def unrelated(state, error):
        calls.append(1)
        if error == "invalid":
            tf.reshape(tf.zeros(3), (2, 2))  # InvalidArgumentError, not Horovod's
        raise tf.errors.UnknownError(None, None, "boom from user code")

    for error, expected in (("invalid", tf.errors.InvalidArgumentError),
                            ("unknown", tf.errors.UnknownError)):
        try:
            unrelated(hvd_tf.elastic.ObjectState(), error)
        except expected:
            pass
        else:
            raise AssertionError(f"{expected.__name__} did not propagate")
    assert calls == [1, 1], calls

    # A real collective failure: rank 1 shuts down while rank 0 allreduces.
    @hvd_tf.elastic.run
    def peer_leaves(state):
        calls.append(2)
        if hvd_tf.rank() == 1:
            hvd_tf.shutdown()
            return "left"
        hvd_tf.allreduce(tf.ones(2), name="doomed")
        return "not reached"

    if hvd_tf.rank() == 0:
        try:
            peer_leaves(hvd_tf.elastic.ObjectState())
        except HorovodInternalError as e:
            assert isinstance(e.__cause__, tf.errors.OpError), repr(e.__cause__)
        else:
            raise AssertionError("the failed allreduce did not raise HorovodInternalError")
        hvd_tf.shutdown()
    else:
        assert peer_leaves(hvd_tf.elastic.ObjectState()) == "left"
    assert calls.count(2) == 1, calls
    hvd_tf.init()
    assert np.array_equal(hvd_tf.allreduce(tf.ones(2), name="after", op=hvd_tf.Sum).numpy(),
                          [2.0, 2.0])


class _Interrupt(keras.callbacks.Callback):
    """Raises HostsUpdatedInterrupt on every rank at epoch 2, batch 1, once;
    rank 1 first makes its weights and attributes differ (uncommitted)."""

    def __init__(self, state, attempts):
        super().__init__()
        self.state, self.attempts, self.epoch = state, attempts, None

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if len(self.attempts) == 1 and self.epoch == 2 and batch == 1:
            if hvd.rank() == 1:
                for v in self.state.model.trainable_variables:
                    v.assign(v + 1.0)
                self.state.epoch = 50
            raise HostsUpdatedInterrupt(skip_sync=False)


class _EpochLog(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.epochs = []

    def on_epoch_begin(self, epoch, logs=None):
        self.epochs.append(epoch)


def _fit_elastically(resume_with_initial_epoch):
    epochs, steps = 4, 3
    model = make_model(seed=10 + hvd.rank())
    model(np.zeros((2, 4), np.float32))
    state = hvd.elastic.KerasState(model, epoch=0, batch=0)
    resets, attempts, log = [], [], _EpochLog()
    state.register_reset_callbacks([lambda: resets.append(hvd.size())])
    x = np.random.RandomState(hvd.rank()).rand(steps * 4, 4).astype(np.float32)
    y = x.sum(axis=1, keepdims=True)
    callbacks = [hvd.elastic.CommitStateCallback(state),
                 hvd.elastic.UpdateBatchStateCallback(state),
                 hvd.elastic.UpdateEpochStateCallback(state), _Interrupt(state, attempts), log]

    @hvd.elastic.run
    def train(state):
        attempts.append(state.epoch)
        same_everywhere(weights(state.model), "weights at the start of train()")
        same_everywhere((state.epoch, state.batch), "attributes at the start of train()")
        if resume_with_initial_epoch:
            state.model.fit(x, y, batch_size=4, initial_epoch=state.epoch, epochs=epochs,
                            callbacks=callbacks, verbose=0)
        else:
            state.model.fit(x, y, batch_size=4, epochs=epochs - state.epoch,
                            callbacks=callbacks, verbose=0)
        return state.epoch

    assert train(state) == epochs
    assert attempts == [0, 2], attempts  # resumed at the epoch committed before the interrupt
    assert resets == [2], resets
    first, second = log.epochs[:3], log.epochs[3:]
    assert first == [0, 1, 2], log.epochs
    assert second == ([2, 3] if resume_with_initial_epoch else [0, 1]), log.epochs
    assert state.epoch == epochs and state.batch == 0, (state.epoch, state.batch)
    # (BatchNormalization's moving statistics follow each rank's own data)
    same_everywhere([np.asarray(v) for v in model.trainable_variables], "weights after training")


@check
def keras_fit_resumes_with_initial_epoch():
    _fit_elastically(resume_with_initial_epoch=True)


@check
def keras_fit_resumes_with_remaining_epochs():
    _fit_elastically(resume_with_initial_epoch=False)


if __name__ == "__main__":
    hvd.init()
    code = run_all()
    hvd.shutdown()
    sys.exit(code)
