"""Data-parallel training of a small MLP on handwritten digits in plain JAX
(no flax), with optax and `import horovod.jax as hvd`.

The data is scikit-learn's digits set (1797 images of 8x8 pixels, shipped
inside the package: nothing is downloaded), split 80/20 into train and test
with a fixed seed. Every epoch all ranks shuffle the training set the same
way and each takes every size-th sample; every rank runs the same number of
steps. The whole training step -- forward, backward, the gradient allreduce
of hvd.DistributedOptimizer and the optax update -- is one jax.jit program.
Rank 0 prints the loss and test accuracy per epoch and the final accuracy.

    horovodrun -np 2 python examples/jax/jax_mnist.py
    mpirun -np 2 python examples/jax/jax_mnist.py

Exits non-zero if the final test accuracy is not above --min-accuracy
(0.9), if the training loss did not fall, or if the ranks' parameters differ
at the end (rank 0 prints their digest).
"""
import argparse
import hashlib
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import horovod.jax as hvd


def parse_args():
    parser = argparse.ArgumentParser(description="JAX digits (8x8 MNIST) example")
    parser.add_argument("--batch-size", type=int, default=32, help="input batch size per rank")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--lr", type=float, default=0.002, help="Adam learning rate for one rank")
    parser.add_argument("--hidden", type=int, default=64, help="width of the hidden layer")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--fp16-allreduce", action="store_true", default=False,
                        help="use fp16 compression during allreduce")
    parser.add_argument("--min-accuracy", type=float, default=0.9)
    return parser.parse_args()


def digits_arrays(seed):
    """(x_train, y_train, x_test, y_test) as numpy arrays, images flattened
    to 64 features and normalised."""
    digits = load_digits()
    images = (digits.images.reshape(len(digits.images), -1).astype(np.float32) / 16.0 - 0.3) / 0.4
    labels = digits.target.astype(np.int32)
    x_train, x_test, y_train, y_test = train_test_split(images, labels, test_size=0.2,
                                                        random_state=seed, stratify=labels)
    return x_train, y_train, x_test, y_test


def init_params(key, sizes):
    """Dense layers [(w, b), ...] with He-scaled normal weights."""
    params = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:]):
        key, sub = jax.random.split(key)
        params.append({"w": jax.random.normal(sub, (n_in, n_out)) * jnp.sqrt(2.0 / n_in),
                       "b": jnp.zeros(n_out)})
    return params


def logits_fn(params, x):
    for layer in params[:-1]:
        x = jax.nn.relu(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def loss_fn(params, x, y):
    return optax.softmax_cross_entropy_with_integer_labels(logits_fn(params, x), y).mean()


def make_train_step(optimizer):
    @jax.jit
    def train_step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        # update() averages the gradients over the ranks, inside this program.
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss
    return train_step


@jax.jit
def correct_count(params, x, y):
    return jnp.sum(jnp.argmax(logits_fn(params, x), axis=-1) == y)


def metric_sum(value, name):
    """The sum of a per-rank number over all ranks (an eager allreduce)."""
    return float(hvd.allreduce(jnp.asarray(value, jnp.float32), op=hvd.Sum, name=name))


def evaluate(params, x_test, y_test):
    """Accuracy over the whole test set: each rank scores its shard."""
    x, y = x_test[hvd.rank()::hvd.size()], y_test[hvd.rank()::hvd.size()]
    correct = metric_sum(int(correct_count(params, x, y)), "test.correct")
    return correct / len(y_test)


def parameters_digest(params):
    """A short hash of every parameter's bytes: equal on every rank while
    data parallelism keeps the replicas identical."""
    digest = hashlib.sha256()
    for leaf in jax.tree_util.tree_leaves(params):
        digest.update(np.asarray(leaf).tobytes())
    return digest.hexdigest()[:16]


def main():
    args = parse_args()
    hvd.init()
    x_train, y_train, x_test, y_test = digits_arrays(args.seed)

    # Different initial weights on every rank: the broadcast below makes
    # rank 0's the common starting point.
    params = init_params(jax.random.PRNGKey(args.seed + hvd.rank()), [64, args.hidden, 10])
    params = hvd.broadcast_parameters(params, root_rank=0)

    # Averaging gradients over N ranks makes each step N times larger in
    # batch, so the learning rate grows with it.
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(optax.adam(args.lr * hvd.size()),
                                         compression=compression)
    opt_state = optimizer.init(params)
    train_step = make_train_step(optimizer)

    # Every rank runs the same number of steps (each one communicates).
    steps = len(x_train) // (args.batch_size * hvd.size())
    losses = []
    for epoch in range(1, args.epochs + 1):
        order = np.random.default_rng(args.seed + epoch).permutation(len(x_train))
        mine = order[hvd.rank()::hvd.size()]
        total = 0.0
        for step in range(steps):
            idx = mine[step * args.batch_size:(step + 1) * args.batch_size]
            params, opt_state, loss = train_step(params, opt_state, x_train[idx], y_train[idx])
            total += float(loss)
        losses.append(metric_sum(total / steps, "train.loss") / hvd.size())
        accuracy = evaluate(params, x_test, y_test)
        if hvd.rank() == 0:
            print(f"epoch {epoch}/{args.epochs}: train loss {losses[-1]:.4f}  "
                  f"test accuracy {100 * accuracy:.2f}%", flush=True)

    accuracy = evaluate(params, x_test, y_test)
    digests = hvd.allgather_object(parameters_digest(params))
    in_sync = len(set(digests)) == 1
    ok = accuracy > args.min_accuracy and (len(losses) < 2 or losses[-1] < losses[0]) and in_sync
    if hvd.rank() == 0:
        print(f"final test accuracy {100 * accuracy:.2f}% on {len(y_test)} images with "
              f"{hvd.size()} processes", flush=True)
        print(f"parameters {'identical' if in_sync else 'DIFFER'} on all {hvd.size()} ranks "
              f"(digests {sorted(set(digests))})", flush=True)
        if not ok:
            print(f"FAILED: accuracy must exceed {100 * args.min_accuracy:.0f}%, the training "
                  f"loss must fall (epoch losses: {[round(x, 4) for x in losses]}) and every "
                  f"rank must end with the same parameters", flush=True)
    hvd.shutdown()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
