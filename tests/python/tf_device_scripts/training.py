"""Training with horovod.tensorflow where the variables and gradients live
on a TensorFlow PluggableDevice (the emulated "GCU", tests/emulated/tf_gcu),
run by test_tf_device.py through horovodrun under scripts/emulated_gcu.sh:

    python training.py tape|graph

tape: a linear model trained with hvd.DistributedGradientTape in eager mode.
The forward MatMul, the residual (Sub) and the gradient MatMul run on the
GCU (the emulated plugin's kernels); the gradient allreduce runs on the GCU
through the GCU device plugin; the update (Sub + AssignVariableOp) on the
GCU. Checked: every gradient is a GCU tensor, the plugin ran the
allreduces, the loss falls, the weights agree on every rank.

graph: the seed TF1 script's pattern with the variables on the GCU:
hvd.DistributedOptimizer(GradientDescentOptimizer) through a
MonitoredTrainingSession with hvd.BroadcastGlobalVariablesHook(0), as far as
the device's kernels allow. On the GCU: the variable, the forward MatMul,
the gradient MatMul, its allreduce (in the plugin), the update (Sub, Mul,
AssignVariableOp) and the hook's broadcast of the variable (in the plugin).
On the CPU (the emulated device has no kernels for them): the loss (Square,
Mean) and its gradient, TF copying `pred` and its gradient across. The
update is `w.assign(w - lr * g)` from the optimizer's compute_gradients
rather than apply_gradients: the GCU has no ResourceApplyGradientDescent
kernel (a vendor's TF plugin ships one). Checked: the hook made the weights equal (rank-dependent
initial values), the plugin ran collectives, the loss falls, the weights
agree on every rank at the end.
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
MODE = sys.argv[1]
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tensorflow.python.framework import load_library  # noqa: E402 (TF 2.21 has no public alias)

load_library.load_pluggable_device_library(os.environ["HVDA_TEST_TF_PLUGIN"])
if MODE == "graph":
    tf.compat.v1.disable_v2_behavior()

import horovod.tensorflow as hvd  # noqa: E402
from horovod_accel.common.default_runtime import DEFAULT_RUNTIME  # noqa: E402

DEV = "/device:GCU:0"
D, ROWS, STEPS, LR = 4, 16, 40, 0.05
W_TRUE = np.arange(1, D + 1, dtype=np.float32).reshape(D, 1) / D


def plugin_ops():
    return sum(DEFAULT_RUNTIME.initialized_runtime().plugin_activity("gcu").values())


def shard(rank):
    x = np.random.RandomState(100 + rank).uniform(-1, 1, (ROWS, D)).astype(np.float32)
    return x, x @ W_TRUE


def agree(w, what):
    every = hvd.allgather_object(np.asarray(w).round(6).tolist())
    assert all(e == every[0] for e in every), f"{what} differ across ranks: {every}"


def tape_training():
    hvd.init()
    r = hvd.rank()
    x_np, y_np = shard(r)
    with tf.device(DEV):
        w = tf.Variable(np.full((D, 1), float(r), np.float32))  # differs per rank until broadcast
        x, y = tf.identity(tf.constant(x_np)), tf.identity(tf.constant(y_np))
    hvd.broadcast_variables([w], root_rank=0)
    agree(w.numpy(), "weights after broadcast_variables")
    before = plugin_ops()
    losses = []
    for _ in range(STEPS):
        with tf.device(DEV):
            with tf.GradientTape() as tape:
                pred = tf.matmul(x, w)
            tape = hvd.DistributedGradientTape(tape)
            resid = pred - y
            (g,) = tape.gradient(pred, [w], output_gradients=resid / ROWS)
            assert g.device.endswith("GCU:0"), f"gradient on {g.device}"
            w.assign(w - LR * 4 * g)
        losses.append(float(0.5 * np.mean(resid.numpy() ** 2)))
    ran = plugin_ops() - before
    assert ran >= STEPS, f"the GCU plugin ran {ran} collectives in {STEPS} steps"
    assert w.device.endswith("GCU:0"), w.device
    assert losses[-1] < 0.2 * losses[0], f"loss did not fall: {losses[0]} -> {losses[-1]}"
    agree(w.numpy(), "weights after training")
    print(f"rank {r}: loss {losses[0]:.4f} -> {losses[-1]:.4f}, {ran} plugin collectives",
          flush=True)


def graph_training():
    hvd.init()
    r = hvd.rank()
    x_np, y_np = shard(r)
    with tf.device(DEV):
        w = tf.compat.v1.get_variable("w", initializer=np.full((D, 1), float(r), np.float32),
                                      use_resource=True)
        x = tf.constant(x_np)
        pred = tf.matmul(x, w)
    with tf.device("/device:CPU:0"):  # no GCU kernels for Square/Mean and their gradients
        loss = 0.5 * tf.reduce_mean(tf.square(pred - y_np))
    opt = hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(LR * 4))
    with tf.device(DEV):
        # compute_gradients allreduces the gradients (MatMul's gradient runs
        # on the GCU, so its allreduce does too). The update is an assign:
        # the GCU has no ResourceApplyGradientDescent kernel (a vendor's TF
        # plugin would ship one), and TF must not run the CPU one on device
        # memory.
        ((g, _),) = opt.compute_gradients(loss, var_list=[w])
        train_op = w.assign(w - (LR * 4) * g)
    with tf.device("/device:CPU:0"):
        every_w = hvd.allgather(tf.reshape(w.read_value(), [1, D]))  # one row per rank
    hooks = [hvd.BroadcastGlobalVariablesHook(0)]
    config = tf.compat.v1.ConfigProto(allow_soft_placement=True)
    losses = []
    with tf.compat.v1.train.MonitoredTrainingSession(hooks=hooks, config=config) as sess:
        first = sess.run(every_w)
        assert (first == first[0]).all(), f"weights after BroadcastGlobalVariablesHook: {first}"
        before = plugin_ops()
        for _ in range(STEPS):
            _, lv = sess.run([train_op, loss])
            losses.append(float(lv))
        ran = plugin_ops() - before
        final = sess.run(every_w)
    assert ran >= STEPS, f"the GCU plugin ran {ran} collectives in {STEPS} steps"
    assert losses[-1] < 0.2 * losses[0], f"loss did not fall: {losses[0]} -> {losses[-1]}"
    assert (final == final[0]).all(), f"weights differ across ranks after training: {final}"
    print(f"rank {r}: loss {losses[0]:.4f} -> {losses[-1]:.4f}, {ran} plugin collectives",
          flush=True)


if __name__ == "__main__":
    tape_training() if MODE == "tape" else graph_training()
    print(f"TRAINING OK rank {hvd.rank()}", flush=True)
    hvd.shutdown()
