"""horovod.tensorflow.keras (Keras 3) -- or horovod.keras under
KERAS_BACKEND=torch -- in model.fit:
    horovodrun -np N python tests/python/tf_api_scripts/keras_checks.py CKPT_DIR"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "job_lib"))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

if keras.backend.backend() == "torch":
    import horovod.keras as hvd  # noqa: E402
else:
    import horovod.tensorflow.keras as hvd  # noqa: E402
from check_harness import check, close, main, unregister  # noqa: E402

CKPT_DIR = sys.argv[1]
N, BATCH = 48, 8          # per rank: 6 steps per epoch


def rank_data(rank):
    rng = np.random.default_rng(100 + rank)
    x = rng.normal(size=(N, 4)).astype("float32")
    return x, (x[:, 0] + x[:, 1] > 0).astype("int64")


def model(seed):
    keras.utils.set_random_seed(seed)      # different weights per rank unless broadcast
    m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="tanh"),
                          keras.layers.Dense(2)])
    return m


def compile_(m, opt, **kwargs):
    m.compile(optimizer=opt, metrics=["accuracy"],
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), **kwargs)


def weights(m):
    return np.concatenate([np.asarray(keras.ops.convert_to_numpy(v)).ravel() for v in m.weights])


def same_on_every_rank(values, what):
    spread = hvd.allreduce(values, op=hvd.Max) - hvd.allreduce(values, op=hvd.Min)
    assert np.max(np.abs(spread)) == 0, f"{what} differ across ranks by {np.max(np.abs(spread))}"


class Record(keras.callbacks.Callback):
    """Copies logs (before the callbacks after it change them) and per-batch LRs."""

    def __init__(self):
        super().__init__()
        self.epoch_logs, self.lrs = [], []

    def on_train_batch_begin(self, batch, logs=None):
        self.lrs.append(float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate)))

    def on_epoch_end(self, epoch, logs=None):
        self.epoch_logs.append(dict(logs))


@check
def fit_gives_identical_weights_and_averaged_metrics():
    m = model(seed=hvd.rank())
    compile_(m, hvd.DistributedOptimizer(keras.optimizers.Adam(0.01)))
    before, after = Record(), Record()
    callbacks = [hvd.callbacks.BroadcastGlobalVariablesCallback(0), before,
                 hvd.callbacks.MetricAverageCallback(), after]
    x, y = rank_data(hvd.rank())
    hist = m.fit(x, y, batch_size=BATCH, epochs=2, callbacks=callbacks, verbose=0)
    same_on_every_rank(weights(m), "weights after fit")
    for local, averaged in zip(before.epoch_logs, after.epoch_logs):
        for key in ("loss", "accuracy"):
            close(averaged[key], np.mean(hvd.allgather(np.array([local[key]]))), key)
    close(hist.history["loss"], [e["loss"] for e in after.epoch_logs], "History holds averages")


@check
def fit_matches_single_process_training():
    # SGD on averaged gradients == one process on every rank's batch i together.
    m = model(seed=7)
    compile_(m, hvd.DistributedOptimizer(keras.optimizers.SGD(0.1)))
    x, y = rank_data(hvd.rank())
    m.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    ref = model(seed=7)
    compile_(ref, keras.optimizers.SGD(0.1))
    parts = [rank_data(r) for r in range(hvd.size())]
    for i in range(N // BATCH):
        sl = slice(i * BATCH, (i + 1) * BATCH)
        xs = [p[0][sl] for p in parts]
        ys = [p[1][sl] for p in parts]
        ref.train_on_batch(np.concatenate(xs), np.concatenate(ys))
    close(weights(m), weights(ref), "distributed vs single-process weights", tol=1e-4)


@check
def warmup_and_schedule_learning_rates():
    m = model(seed=1)
    compile_(m, hvd.DistributedOptimizer(keras.optimizers.SGD(0.1)))
    rec = Record()
    warm = hvd.callbacks.LearningRateWarmupCallback(initial_lr=0.1, warmup_epochs=2)
    sched = hvd.callbacks.LearningRateScheduleCallback(initial_lr=0.1, multiplier=0.5,
                                                       start_epoch=2)
    x, y = rank_data(hvd.rank())
    m.fit(x, y, batch_size=BATCH, epochs=3, callbacks=[warm, sched, rec], verbose=0)
    steps, size = N // BATCH, hvd.size()
    expected = [0.1 / size * ((e + b / steps + 1 / steps) * (size - 1) / 2 + 1)
                for e in range(2) for b in range(steps)] + [0.05] * steps
    close(rec.lrs, expected, "learning rate per batch", tol=1e-5)


@check
def backward_passes_per_step_applies_every_n():
    if keras.backend.backend() == "torch":
        try:
            hvd.DistributedOptimizer(keras.optimizers.SGD(0.1), backward_passes_per_step=3)
        except ValueError as e:
            assert "gradient_accumulation_steps" in str(e), e
            return
        raise AssertionError("torch backend: backward_passes_per_step > 1 must be refused")
    m = model(seed=2)
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(0.1), backward_passes_per_step=3)
    compile_(m, opt)
    x, y = rank_data(hvd.rank())
    m.fit(x, y, batch_size=BATCH, epochs=1, callbacks=[
        hvd.callbacks.BroadcastGlobalVariablesCallback(0)], verbose=0)
    assert int(keras.ops.convert_to_numpy(opt.iterations)) == (N // BATCH) // 3
    same_on_every_rank(weights(m), "weights with backward_passes_per_step")


@check
def checkpoint_on_rank_0_then_resume():
    path = os.path.join(CKPT_DIR, f"model-{keras.backend.backend()}.keras")
    m = model(seed=3)
    compile_(m, hvd.DistributedOptimizer(keras.optimizers.Adam(0.01)))
    x, y = rank_data(hvd.rank())
    m.fit(x, y, batch_size=BATCH, epochs=1, verbose=0,
          callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
    if hvd.rank() == 0:
        m.save(path)
    hvd.allreduce(np.zeros(1), name="saved")      # barrier: the file exists now
    saved = weights(m)
    # Rank 0 resumes from the file; the others start from fresh weights.
    if hvd.rank() == 0:
        resumed = hvd.load_model(path)
        steps = int(keras.ops.convert_to_numpy(resumed.optimizer.iterations))
        assert steps == N // BATCH, steps
    else:
        resumed = model(seed=50 + hvd.rank())
        compile_(resumed, hvd.DistributedOptimizer(keras.optimizers.Adam(0.01)))

    class CheckStart(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            close(weights(self.model), saved, "weights after the resume broadcast")
            it = keras.ops.convert_to_numpy(self.model.optimizer.iterations)
            assert int(it) == N // BATCH, f"optimizer state not broadcast: iterations={it}"

    resumed.fit(x, y, batch_size=BATCH, epochs=1, verbose=0,
                callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0), CheckStart()])
    same_on_every_rank(weights(resumed), "weights after resumed training")


@check
def value_helpers_and_errors():
    v = np.arange(6, dtype=np.float32).reshape(3, 2) + hvd.rank()
    avg = np.mean([np.arange(6).reshape(3, 2) + r for r in range(hvd.size())], axis=0)
    close(hvd.allreduce(v), avg, "allreduce")
    close(hvd.allgather(v), np.concatenate([np.arange(6).reshape(3, 2) + r
                                            for r in range(hvd.size())]), "allgather")
    close(hvd.broadcast(v, 0), np.arange(6).reshape(3, 2), "broadcast")
    try:
        hvd.DistributedOptimizer(hvd.DistributedOptimizer(keras.optimizers.SGD()))
    except ValueError as e:
        assert "already" in str(e)
    else:
        raise AssertionError("double wrapping must raise")
    try:
        hvd.broadcast_global_variables(0)
    except RuntimeError as e:
        assert "BroadcastGlobalVariablesCallback" in str(e)
    else:
        raise AssertionError("broadcast_global_variables must raise under Keras 3")


@check
def partial_distributed_optimizer_keeps_local_layers_local():
    # One SGD step from the same start: the shared layer gets the averaged
    # gradient (same on every rank); the local layer its own gradient divided
    # by the size (scale_local_gradients), i.e. a plain step with lr / size.
    m = model(seed=6)
    local = m.layers[0]
    opt = hvd.PartialDistributedOptimizer(keras.optimizers.SGD(0.1), local_layers=local)
    compile_(m, opt)
    x, y = rank_data(hvd.rank())
    m.train_on_batch(x, y)
    same_on_every_rank(np.concatenate([np.ravel(keras.ops.convert_to_numpy(v))
                                       for v in m.layers[1].weights]), "shared layer weights")
    ref = model(seed=6)
    compile_(ref, keras.optimizers.SGD(0.1 / hvd.size()))
    ref.train_on_batch(x, y)
    for mine, plain in zip(local.weights, ref.layers[0].weights):
        close(keras.ops.convert_to_numpy(mine), keras.ops.convert_to_numpy(plain),
              "local layer = plain step with lr / size", tol=1e-5)
    try:
        hvd.PartialDistributedOptimizer(keras.optimizers.SGD(), local_layers=[local, "x"])
    except ValueError as e:
        assert "Layer" in str(e), e
    else:
        raise AssertionError("a local layer that is not a Layer must raise ValueError")


@check
def compute_gradients_reduces_once():
    # Keras 2's (_)compute_gradients, kept from upstream's wrapper: reduced
    # gradients that apply_gradients() applies without reducing them again.
    if keras.backend.backend() != "tensorflow":
        try:
            hvd.DistributedOptimizer(keras.optimizers.SGD()).compute_gradients(
                lambda: 0.0, [keras.Variable(1.0)])
        except NotImplementedError:
            return
        raise AssertionError("compute_gradients needs the TensorFlow backend")
    import tensorflow as tf  # noqa: PLC0415

    size, r = hvd.size(), hvd.rank()
    w = tf.Variable([1.0, 2.0])
    c = tf.constant([1.0 + r, -r])           # d(sum(c * w))/dw = c
    csum = np.array([sum(1.0 + q for q in range(size)), -sum(range(size))])
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(1.0), op=hvd.Sum)
    gv = opt._compute_gradients(lambda: tf.reduce_sum(c * w), [w])
    close(gv[0][0], csum, "_compute_gradients returns the reduced gradient")
    assert gv[0][1] is w
    opt.apply_gradients(gv)
    close(w, np.array([1.0, 2.0]) - csum, "applied once (Sum reduced once, not twice)")
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(c * w)
    opt.apply_gradients(opt.compute_gradients(loss, [w], tape=tape))
    close(w, np.array([1.0, 2.0]) - 2 * csum, "compute_gradients(loss, vars, tape)")
    # backward_passes_per_step=2 inside tf.function (as upstream's tests): the
    # second pass applies the reduced sum of both passes.
    v = tf.Variable([0.0, 0.0])
    agg = hvd.DistributedOptimizer(keras.optimizers.SGD(1.0), op=hvd.Sum,
                                   backward_passes_per_step=2)

    @tf.function
    def step():
        agg.apply_gradients(agg._compute_gradients(lambda: tf.reduce_sum(c * v), [v]))
    step()
    close(v, [0.0, 0.0], "nothing applied after the first pass")
    step()
    close(v, -2 * csum, "both passes applied after the second")
    try:
        opt.compute_gradients(tf.constant(1.0), [w])
    except ValueError as e:
        assert "tape" in str(e), e
    else:
        raise AssertionError("a tensor loss without tape must raise ValueError")


@check
def jit_compile_true_is_refused_clearly():
    m = model(seed=4)
    compile_(m, hvd.DistributedOptimizer(keras.optimizers.SGD(0.1)), jit_compile=True)
    x, y = rank_data(hvd.rank())
    try:
        m.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
    except ValueError as e:
        assert "jit_compile=False" in str(e), e
    else:
        raise AssertionError("jit_compile=True must raise a clear ValueError")


@check
def sparse_embedding_model_fit():
    keras.utils.set_random_seed(5)
    m = keras.Sequential([keras.Input((3,), dtype="int32"), keras.layers.Embedding(20, 4),
                          keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(2)])
    compile_(m, hvd.DistributedOptimizer(keras.optimizers.SGD(0.1)))
    rng = np.random.default_rng(hvd.rank())
    ids = rng.integers(0, 20, size=(N, 3)).astype("int32")
    m.fit(ids, (ids[:, 0] > 9).astype("int64"), batch_size=BATCH, epochs=1, verbose=0,
          callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
    same_on_every_rank(weights(m), "embedding model weights")


if keras.backend.backend() != "tensorflow":
    # XLA and tf.IndexedSlices are TensorFlow's (test_keras.py expects these two to be absent).
    unregister(jit_compile_true_is_refused_clearly, sparse_embedding_model_fit)


if __name__ == "__main__":
    sys.exit(main(hvd))
