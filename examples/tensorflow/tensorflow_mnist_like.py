"""The classic Horovod TF1 script on handwritten digits
(`import horovod.tensorflow as hvd`, graph mode through tf.compat.v1):
AdagradOptimizer wrapped in hvd.DistributedOptimizer,
hvd.BroadcastGlobalVariablesHook(0) and MonitoredTrainingSession, which
writes checkpoints on rank 0 only.

The data is scikit-learn's digits set (shipped inside the package: nothing
is downloaded), split 80/20 with a fixed seed; every rank draws its own
random batches. Rank 0 prints progress and the final test accuracy.

    horovodrun -np 2 python examples/tensorflow/tensorflow_mnist_like.py

Exits non-zero if the test accuracy is not above --min-accuracy (0.9).
"""
import argparse
import sys

import numpy as np
import tensorflow as tf
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import horovod.tensorflow as hvd

v1 = tf.compat.v1


def parse_args():
    p = argparse.ArgumentParser(description="TF1 digits example (MonitoredTrainingSession)")
    p.add_argument("--steps", type=int, default=600, help="training steps in total")
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--lr", type=float, default=0.05, help="learning rate for one rank")
    p.add_argument("--checkpoint-dir", default=None, help="rank 0 checkpoints here")
    p.add_argument("--min-accuracy", type=float, default=0.9)
    return p.parse_args()


def dense(x, units, name):
    """A TF1 dense layer from raw variables (tf.compat.v1.layers needs Keras 2)."""
    with v1.variable_scope(name):
        w = v1.get_variable("kernel", [x.shape[1], units],
                            initializer=v1.glorot_uniform_initializer())
        b = v1.get_variable("bias", [units], initializer=v1.zeros_initializer())
        return tf.matmul(x, w) + b


def model(images, labels):
    hidden = tf.nn.relu(dense(images, 128, "hidden"))
    logits = dense(hidden, 10, "logits")
    loss = v1.losses.sparse_softmax_cross_entropy(labels, logits)
    return tf.argmax(logits, axis=1), loss


class PredictAtEnd(v1.train.SessionRunHook):
    """Runs `predictions` on the test images when the session ends (the
    MonitoredTrainingSession refuses run() after its stop hook fired)."""

    def __init__(self, predictions, feed):
        self.predictions, self.feed, self.result = predictions, feed, None

    def end(self, session):
        self.result = session.run(self.predictions, self.feed)


def main():
    args = parse_args()
    v1.disable_eager_execution()
    hvd.init()
    digits = load_digits()
    data = digits.data.astype("float32") / 16.0
    x_train, x_test, y_train, y_test = train_test_split(data, digits.target, test_size=0.2,
                                                        random_state=42)
    images = v1.placeholder(tf.float32, [None, 64])
    labels = v1.placeholder(tf.int64, [None])
    predictions, loss = model(images, labels)

    # Horovod: scale the learning rate by the number of ranks; wrap the optimizer.
    opt = v1.train.AdagradOptimizer(args.lr * hvd.size())
    opt = hvd.DistributedOptimizer(opt)
    global_step = v1.train.get_or_create_global_step()
    train_op = opt.minimize(loss, global_step=global_step)

    hooks = [
        # Horovod: broadcast the initial variables from rank 0 to all ranks.
        hvd.BroadcastGlobalVariablesHook(0),
        # Horovod: divide the steps between the ranks.
        v1.train.StopAtStepHook(last_step=args.steps // hvd.size()),
    ]
    evaluate = PredictAtEnd(predictions, {images: x_test})
    # Horovod: save checkpoints only on rank 0, so ranks do not overwrite each other.
    checkpoint_dir = args.checkpoint_dir if hvd.rank() == 0 else None
    rng = np.random.default_rng(hvd.rank())
    with v1.train.MonitoredTrainingSession(checkpoint_dir=checkpoint_dir,
                                           hooks=hooks + [evaluate]) as sess:
        while not sess.should_stop():
            idx = rng.integers(0, len(x_train), args.batch_size)
            _, step, loss_value = sess.run([train_op, global_step, loss],
                                           {images: x_train[idx], labels: y_train[idx]})
            if hvd.rank() == 0 and step % 100 == 0:
                print(f"step {step}: train loss {loss_value:.4f}", flush=True)
    accuracy = float(np.mean(evaluate.result == y_test))
    if hvd.rank() == 0:
        print(f"final test accuracy {100 * accuracy:.2f}%", flush=True)
    return 0 if accuracy > args.min_accuracy else 1


if __name__ == "__main__":
    sys.exit(main())
