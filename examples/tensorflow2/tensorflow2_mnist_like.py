"""Data-parallel TF2 custom training loop on handwritten digits with
hvd.DistributedGradientTape (`import horovod.tensorflow as hvd`).

The data is scikit-learn's digits set (1797 8x8 images shipped inside the
package: nothing is downloaded), split 80/20 with a fixed seed; each rank
trains on its shard of the training set. Variables are broadcast from rank 0
after the first step (when the optimizer's state exists); rank 0 prints the
progress and the final test accuracy.

    horovodrun -np 2 python examples/tensorflow2/tensorflow2_mnist_like.py

Exits non-zero if the test accuracy is not above --min-accuracy (0.9).
"""
import argparse
import sys

import numpy as np
import tensorflow as tf
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import horovod.tensorflow as hvd


def parse_args():
    p = argparse.ArgumentParser(description="TF2 digits example (DistributedGradientTape)")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--batch-size", type=int, default=32, help="per rank")
    p.add_argument("--lr", type=float, default=0.002, help="learning rate for one rank")
    p.add_argument("--min-accuracy", type=float, default=0.9)
    return p.parse_args()


def main():
    args = parse_args()
    hvd.init()
    tf.random.set_seed(hvd.rank())      # different initial weights: the broadcast unifies them
    digits = load_digits()
    images = (digits.images[..., None].astype("float32") / 16.0 - 0.3) / 0.4
    x_train, x_test, y_train, y_test = train_test_split(images, digits.target, test_size=0.2,
                                                        random_state=42)
    train = (tf.data.Dataset.from_tensor_slices((x_train, y_train))
             .shard(hvd.size(), hvd.rank()).shuffle(2000, seed=1).batch(args.batch_size))

    model = tf.keras.Sequential([
        tf.keras.Input((8, 8, 1)),
        tf.keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10)])
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    # Horovod: scale the learning rate by the number of ranks.
    opt = tf.keras.optimizers.Adam(args.lr * hvd.size())

    @tf.function
    def training_step(images, labels):
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True))
        # Horovod: average the gradients across ranks.
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    first = True
    for epoch in range(args.epochs):
        losses = []
        for images_b, labels_b in train:
            losses.append(float(training_step(images_b, labels_b)))
            if first:
                # Horovod: start every rank from rank 0's model and optimizer state.
                hvd.broadcast_variables(model.variables, root_rank=0)
                hvd.broadcast_variables(opt.variables, root_rank=0)
                first = False
        mean_loss = hvd.allreduce(tf.constant(np.mean(losses)), name="epoch_loss")
        if hvd.rank() == 0:
            print(f"epoch {epoch + 1}/{args.epochs}: train loss {float(mean_loss):.4f}", flush=True)

    accuracy = float(np.mean(np.argmax(model(x_test), axis=1) == y_test))
    if hvd.rank() == 0:
        print(f"final test accuracy {100 * accuracy:.2f}%", flush=True)
    return 0 if accuracy > args.min_accuracy else 1


if __name__ == "__main__":
    sys.exit(main())
