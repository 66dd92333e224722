"""The MultiWorkerMirroredStrategy twin of upstream Horovod's
examples/tensorflow2/tensorflow2_keras_synthetic_benchmark.py (Keras
model.fit), started by benchmarks/synthetic.py as MWMS users start it: one
process per worker, each with its TF_CONFIG.

Same flags, Keras application model (random init), synthetic dataset,
optimizer (SGD 0.01), epochs of --num-batches-per-iter steps and timing
callback (the first epoch is the warm-up) as upstream's script, and the same
output lines. Each replica trains on --batch-size rows per step, as each
Horovod rank does: the dataset's global batch is that times the workers.
Keras 3's model.fit needs two fixes to run under MWMS at all
(train_peers/keras_worker.py: patch_keras_for_mwms), applied here.

--no-communication: the "ideal" row: no strategy, every process trains
alone; each prints "Rank <i> img/sec per <device>: ...", the driver sums.
"""
import json
import os
import sys
from timeit import default_timer as timer

import tensorflow as tf
from tensorflow.keras import applications

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "train_peers")]
from twin_common import parse_args, report, report_weights  # noqa: E402

args = parse_args(__doc__.splitlines()[0], "ResNet50", warmup=False)
if args.no_cuda:
    os.environ["CUDA_VISIBLE_DEVICES"] = "-1"
device = "CPU" if args.no_cuda or not tf.config.list_physical_devices("GPU") else "GPU"

if args.no_communication:
    strategy = tf.distribute.get_strategy()
    rank = int(os.environ.get("HVDA_TWIN_INDEX", "0"))
else:
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    rank = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
size = strategy.num_replicas_in_sync
if rank == 0 and not args.no_communication:
    print(f"Model: {args.model}")
    print(f"Batch size: {args.batch_size}")
    print(f"Number of {device}s: {size}")

data = tf.random.uniform([args.batch_size, 224, 224, 3])
target = tf.random.uniform([args.batch_size, 1], minval=0, maxval=999, dtype=tf.int64)
dataset = tf.data.Dataset.from_tensor_slices((data, target)).cache().repeat()
dataset = dataset.batch(args.batch_size * size)
options = tf.data.Options()
options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
dataset = dataset.with_options(options)

with strategy.scope():
    model = getattr(applications, args.model)(weights=None)
    model.compile(loss=tf.losses.SparseCategoricalCrossentropy(),
                  optimizer=tf.optimizers.SGD(0.01))
if not args.no_communication:
    from keras_worker import patch_keras_for_mwms
    patch_keras_for_mwms(model, (data, target))


class TimingCallback(tf.keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.img_secs = []

    def on_train_end(self, logs=None):
        report(self.img_secs, rank, size, device, args.no_communication)

    def on_epoch_begin(self, epoch, logs=None):
        self.starttime = timer()

    def on_epoch_end(self, epoch, logs=None):
        img_sec = args.batch_size * args.num_batches_per_iter / (timer() - self.starttime)
        if not args.no_communication:
            print(f"Iter #{epoch}: {img_sec:.1f} img/sec per {device}")
        if epoch > 0:  # the first epoch is the warm-up, as upstream's
            self.img_secs.append(img_sec)


callbacks = [TimingCallback()] if rank == 0 or args.no_communication else []
model.fit(dataset, steps_per_epoch=args.num_batches_per_iter, callbacks=callbacks,
          epochs=args.num_iters, verbose=0)
report_weights(rank, model.trainable_variables, tf)
