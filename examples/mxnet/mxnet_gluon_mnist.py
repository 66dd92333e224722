"""Data-parallel Gluon training on MNIST-like digits
(`import horovod.mxnet as hvd`): hvd.broadcast_parameters and
hvd.DistributedTrainer.

Data: MNIST's idx files from --data-dir, else synthetic digits-like images
(examples/mxnet/digits_data.py; nothing is downloaded). Each rank trains on
every size()-th training image; rank 0 prints the loss per epoch and the
final test accuracy.

    horovodrun -np 2 python examples/mxnet/mxnet_gluon_mnist.py
    horovodrun -np 2 python examples/mxnet/mxnet_gluon_mnist.py --data-dir ~/mnist

Exits non-zero if the test accuracy is not above --min-accuracy (0.9).
"""
import argparse
import os
import sys

import mxnet as mx
from mxnet import autograd, gluon

import horovod.mxnet as hvd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import digits_data  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description="MXNet Gluon MNIST example")
    p.add_argument("--data-dir", default=None, help="folder with MNIST's idx files")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=64, help="per rank")
    p.add_argument("--lr", type=float, default=0.05, help="learning rate for one rank")
    p.add_argument("--fp16-allreduce", action="store_true", help="send gradients as float16")
    p.add_argument("--min-accuracy", type=float, default=0.9)
    return p.parse_args()


def as_arrays(images, labels):
    return mx.nd.array(images.reshape(len(images), 1, 28, 28) / 255.0), mx.nd.array(labels)


def build_model():
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Conv2D(16, kernel_size=5, activation="relu"),
                gluon.nn.MaxPool2D(pool_size=2, strides=2),
                gluon.nn.Flatten(),
                gluon.nn.Dense(128, activation="relu"),
                gluon.nn.Dense(10))
    return net


def accuracy(net, images, labels, batch_size=500):
    metric = mx.metric.Accuracy()
    for i in range(0, len(images), batch_size):
        metric.update([labels[i:i + batch_size]], [net(images[i:i + batch_size])])
    return metric.get()[1]


def main():
    args = parse_args()
    hvd.init()
    mx.random.seed(hvd.rank())  # different initial weights per rank: the broadcast matters

    train_x, train_y = digits_data.shard(*digits_data.load(args.data_dir, "train"),
                                         hvd.rank(), hvd.size())
    test_x, test_y = as_arrays(*digits_data.load(args.data_dir, "test"))
    train_iter = mx.io.NDArrayIter(*as_arrays(train_x, train_y), batch_size=args.batch_size,
                                   shuffle=True, last_batch_handle="discard")

    net = build_model()
    net.initialize(mx.init.Xavier(magnitude=2))
    net.hybridize()
    params = net.collect_params()
    # Horovod: start every rank from rank 0's weights (the layers' shapes are
    # inferred at the first forward pass; their broadcast happens then).
    hvd.broadcast_parameters(params, root_rank=0)

    # Horovod: scale the learning rate by the number of ranks; average the
    # gradients over the ranks at every step.
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    trainer = hvd.DistributedTrainer(params, "sgd", {"learning_rate": args.lr * hvd.size(),
                                                     "momentum": 0.9},
                                     compression=compression)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    for epoch in range(args.epochs):
        train_iter.reset()
        total, batches = 0.0, 0
        for batch in train_iter:
            with autograd.record():
                loss = loss_fn(net(batch.data[0]), batch.label[0])
            loss.backward()
            trainer.step(args.batch_size)
            total += loss.mean().asscalar()
            batches += 1
        # Horovod: average the epoch's loss over the ranks for the report.
        mean_loss = hvd.allreduce(mx.nd.array([total / batches]), name="epoch_loss").asscalar()
        if hvd.rank() == 0:
            print(f"epoch {epoch + 1}: loss {mean_loss:.4f}", flush=True)

    acc = accuracy(net, test_x, test_y)
    if hvd.rank() == 0:
        print(f"final test accuracy {100 * acc:.2f}%", flush=True)
    hvd.shutdown()
    return 0 if acc > args.min_accuracy else 1


if __name__ == "__main__":
    sys.exit(main())
