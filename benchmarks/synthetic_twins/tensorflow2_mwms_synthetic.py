"""The MultiWorkerMirroredStrategy twin of upstream Horovod's
examples/tensorflow2/tensorflow2_synthetic_benchmark.py (a GradientTape loop
in a tf.function), started by benchmarks/synthetic.py as MWMS users start
it: one process per worker, each with its TF_CONFIG.

Same flags, Keras application model (random init), fixed random batch per
replica, loss, optimizer (SGD 0.01), warm-up and timing loop as upstream's
script, and the same output lines. Under MWMS the optimizer all-reduces the
summed gradients, so the loss is divided by the number of replicas (the
average, as hvd.DistributedGradientTape computes).

--no-communication: the "ideal" row: no strategy, every process trains
alone; each prints "Rank <i> img/sec per <device>: ...", the driver sums.
"""
import json
import os
import sys

import tensorflow as tf
from tensorflow.keras import applications

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from twin_common import parse_args, report, report_weights, timed_iterations  # noqa: E402

args = parse_args(__doc__.splitlines()[0], "ResNet50")
if args.no_cuda:
    os.environ["CUDA_VISIBLE_DEVICES"] = "-1"
device = "CPU" if args.no_cuda or not tf.config.list_physical_devices("GPU") else "GPU"

if args.no_communication:
    strategy = tf.distribute.get_strategy()  # the default: one replica, no communication
    rank = int(os.environ.get("HVDA_TWIN_INDEX", "0"))
else:
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    rank = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
size = strategy.num_replicas_in_sync

with strategy.scope():
    model = getattr(applications, args.model)(weights=None)
    opt = tf.optimizers.SGD(0.01)

data = tf.random.uniform([args.batch_size, 224, 224, 3])
target = tf.random.uniform([args.batch_size, 1], minval=0, maxval=999, dtype=tf.int64)


def replica_step():
    with tf.GradientTape() as tape:
        probs = model(data, training=True)
        loss = tf.losses.sparse_categorical_crossentropy(target, probs)
        loss = tf.reduce_sum(loss) / size
    gradients = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(gradients, model.trainable_variables))


@tf.function
def benchmark_step():
    strategy.run(replica_step)


def log(s):
    if rank == 0 and not args.no_communication:
        print(s, flush=True)


log(f"Model: {args.model}")
log(f"Batch size: {args.batch_size}")
log(f"Number of {device}s: {size}")
with tf.device(device):
    benchmark_step()  # traces the tf.function, as upstream's first_batch step
    img_secs = timed_iterations(benchmark_step, args, device, log)
report(img_secs, rank, size, device, args.no_communication)
report_weights(rank, model.trainable_variables, tf)
