"""A 2-rank TensorFlow 2 job for the installed-wheel tests: linear regression
with hvd.DistributedGradientTape in a tf.function, each rank on its own
shard. Checks that the loss falls and that the ranks' weights agree; prints
TF-WHEEL-JOB-OK with the op library it used.

Usage: python tf_tape_train.py PREFIX   (TensorFlow and horovod_accel's
TensorFlow adapter must both be imported from under PREFIX, the venv)."""
import os
import sys

import numpy as np
import tensorflow as tf

import horovod.tensorflow as hvd
import horovod_accel.tensorflow.mpi_ops as mpi_ops

prefix = sys.argv[1]
for mod in (mpi_ops, tf):
    if not mod.__file__.startswith(prefix):
        sys.exit(f"{mod.__name__} imported from {mod.__file__}, not from {prefix}")
hvd.init()
rank, size = hvd.rank(), hvd.size()
rng = np.random.default_rng(7)
x = rng.normal(size=(256, 8)).astype(np.float32)
y = x @ rng.normal(size=(8, 1)).astype(np.float32)
x, y = x[rank::size], y[rank::size]
w = tf.Variable(tf.random.normal((8, 1), seed=rank))   # differs per rank until broadcast
hvd.broadcast_variables([w], root_rank=0)


@tf.function
def step():
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(x @ w - y))
    tape = hvd.DistributedGradientTape(tape)
    (grad,) = tape.gradient(loss, [w])
    w.assign_sub(0.1 * grad)
    return hvd.allreduce(loss, op=hvd.Average, name="loss")


losses = [float(step()) for _ in range(40)]
if not losses[-1] < 0.05 * losses[0]:
    sys.exit(f"rank {rank}: the loss did not fall: {losses}")
ws = hvd.allgather(tf.reshape(w, (1, 8)), name="weights").numpy()
if not np.allclose(ws, ws[0]):
    sys.exit(f"rank {rank}: the ranks' weights differ: {ws}")
lib = os.path.join(os.path.dirname(mpi_ops.__file__), "libhvda_tf_ops.so")
print(f"TF-WHEEL-JOB-OK rank={rank} size={size} first={losses[0]:.4g} last={losses[-1]:.4g} "
      f"lib={lib}", flush=True)
hvd.shutdown()
