"""One process of a Keras model.fit throughput job (started by
benchmarks/train_step.py --framework tf).

--mode local: plain Keras, no communication (the driver starts np of these at
              once for the "ideal" row).
--mode mwms:  tf.distribute.MultiWorkerMirroredStrategy, one CPU replica per
              process; TF_CONFIG comes from the driver. The dataset yields
              global batches of np x --batch-size, which the strategy splits,
              so every replica trains on --batch-size samples per step.
--mode hvda:  `import horovod.tensorflow.keras as hvd` (started by horovodrun):
              hvd.DistributedOptimizer(keras optimizer) and
              hvd.callbacks.BroadcastGlobalVariablesCallback(0).

Every mode: the models of train_peers/models.py built in Keras (channels-last
CNN), SGD(lr 0.001, momentum 0.9), sparse cross-entropy from logits,
model.compile defaults (jit_compile "auto": no XLA on CPU-only TensorFlow),
model.fit for one epoch of warmup + iters steps on one fixed random batch,
one intra-op and one inter-op thread per process. What is measured: each
step from on_train_batch_begin to on_train_batch_end (perf_counter), on
every process. Each process writes {"iter_s": [...] (warm-up dropped),
"weights_sum": ..., ...}
to <--out-prefix>.<rank>.json; the driver takes the max over ranks per step.
"""
import argparse
import contextlib
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
keras.config.disable_traceback_filtering()


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=["local", "mwms", "hvda"], required=True)
    p.add_argument("--model", choices=["mlp", "cnn"], required=True)
    p.add_argument("--batch-size", type=int, required=True, help="samples per replica per step")
    p.add_argument("--iters", type=int, required=True)
    p.add_argument("--warmup", type=int, required=True)
    p.add_argument("--out-prefix", required=True)
    p.add_argument("--index", type=int, default=0, help="local mode: this process's number")
    p.add_argument("--comm", choices=["RING", "AUTO"], default="RING",
                   help="mwms: CommunicationImplementation (AUTO is RING without GPUs)")
    return p.parse_args()


def build_model(keras, name):
    """(model, sample shape): the Keras twins of train_peers/models.py."""
    L = keras.layers
    if name == "mlp":
        layers = [L.Dense(2048, activation="relu") for _ in range(3)] + [L.Dense(10)]
        return keras.Sequential([keras.Input((1024,))] + layers), (1024,)
    layers = [keras.Input((32, 32, 3))]
    for ch in (32, 64, 128, 256):
        layers += [L.Conv2D(ch, 3, padding="same", activation="relu"), L.MaxPooling2D(2)]
    layers += [L.Flatten(), L.Dense(384, activation="relu"), L.Dense(10)]
    return keras.Sequential(layers), (32, 32, 3)


def main():
    a = parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)   # 2 or 0: no faster for MWMS

    strategy, rank, size, callbacks = None, a.index, 1, []
    if a.mode == "mwms":
        impl = getattr(tf.distribute.experimental.CommunicationImplementation, a.comm)
        strategy = tf.distribute.MultiWorkerMirroredStrategy(
            communication_options=tf.distribute.experimental.CommunicationOptions(
                implementation=impl))
        rank = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
        size = strategy.num_replicas_in_sync
    elif a.mode == "hvda":
        import horovod.tensorflow.keras as hvd
        hvd.init()
        rank, size = hvd.rank(), hvd.size()
        callbacks.append(hvd.callbacks.BroadcastGlobalVariablesCallback(0))

    keras.utils.set_random_seed(0)       # same initial weights everywhere
    with strategy.scope() if strategy else contextlib.nullcontext():
        model, shape = build_model(keras, a.model)
        opt = keras.optimizers.SGD(learning_rate=0.001, momentum=0.9)
        if a.mode == "hvda":
            opt = hvd.DistributedOptimizer(opt)
        model.compile(optimizer=opt,
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))

    # Fixed random data; a step's batch is np x batch for MWMS (split per replica).
    rows = a.batch_size * (size if a.mode == "mwms" else 1)
    gen = tf.random.Generator.from_seed(1 + rank)
    x = gen.normal((rows,) + shape)
    y = gen.uniform((rows,), 0, 10, dtype=tf.int64)
    ds = tf.data.Dataset.from_tensors((x, y)).repeat()
    if a.mode == "mwms":
        opts = tf.data.Options()
        opts.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
        ds = ds.with_options(opts)
        patch_keras_for_mwms(model, (x[:a.batch_size], y[:a.batch_size]))

    timer = StepTimer()
    model.fit(ds, epochs=1, steps_per_epoch=a.warmup + a.iters, verbose=0, shuffle=False,
              callbacks=callbacks + [timer])
    weights = model.trainable_variables
    grad_bytes = sum(int(tf.size(v)) * 4 for v in weights)
    # Ranks train on different data: equal sums after fit mean the gradients were averaged.
    checksum = float(sum(tf.reduce_sum(tf.cast(v, tf.float64)) for v in weights))
    with open(f"{a.out_prefix}.{rank}.json", "w") as f:
        json.dump({"iter_s": timer.times[a.warmup:], "rank": rank, "size": size,
                   "batch_size": a.batch_size, "grad_bytes": grad_bytes, "mode": a.mode,
                   "model": a.model, "jit_compile": bool(model.jit_compile),
                   "weights_sum": checksum}, f)
    if a.mode == "hvda":
        hvd.shutdown()


def patch_keras_for_mwms(model, replica_batch):
    """Two Keras 3 bugs keep model.fit from running under MWMS
    (keras-team/keras#20585); both are outside the timed work's substance:
    1. fit's first step reduces a distributed (x, y) batch with
       strategy.reduce, which MWMS cannot do for a tuple. That batch only
       gives the symbolic build its shapes and dtypes: hand it one replica's.
    2. each step's logs (the scalar loss) are averaged over workers with
       strategy.reduce("MEAN", v, axis=0), which fails for a scalar; use
       axis=None (the mean over replicas, what Keras means to compute)."""
    from keras.src.backend.tensorflow import trainer as tf_trainer

    build = model._maybe_symbolic_build
    model._maybe_symbolic_build = lambda iterator=None, data_batch=None: build(
        data_batch=replica_batch)
    reduce_per_replica = tf_trainer.reduce_per_replica

    def reduce_scalars_over_replicas(values, strategy, reduction):
        if reduction in ("auto", "mean"):
            return tf.nest.map_structure(lambda v: strategy.reduce("MEAN", v, axis=None), values)
        return reduce_per_replica(values, strategy, reduction)
    tf_trainer.reduce_per_replica = reduce_scalars_over_replicas


class StepTimer(keras.callbacks.Callback):
    """Wall time of every training step, batch begin to batch end."""

    def __init__(self):
        super().__init__()
        self.times, self._t0 = [], None

    def on_train_batch_begin(self, batch, logs=None):
        self._t0 = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self.times.append(time.perf_counter() - self._t0)


if __name__ == "__main__":
    main()
