"""Data-parallel training with MXNet's symbolic Module API on MNIST-like
digits (`import horovod.mxnet as hvd`): `mx.mod.Module(...).fit()` with
hvd.DistributedOptimizer around an Adam optimizer, the parameters
broadcast from rank 0 first.

Data: MNIST's idx files from --data-dir, else synthetic digits-like images
(examples/mxnet/digits_data.py; nothing is downloaded), fed through
mx.io.NDArrayIter; each rank fits on every size()-th training image. Rank 0
prints the training cross-entropy per epoch and the final test accuracy.

    horovodrun -np 2 python examples/mxnet/mxnet_module_mnist.py

Exits non-zero if the test accuracy is not above --min-accuracy (0.9).
"""
import argparse
import logging
import os
import sys

import mxnet as mx
import numpy as np

import horovod.mxnet as hvd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import digits_data  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description="MXNet Module MNIST example")
    p.add_argument("--data-dir", default=None, help="folder with MNIST's idx files")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=64, help="per rank")
    p.add_argument("--lr", type=float, default=0.002, help="learning rate for one rank")
    p.add_argument("--min-accuracy", type=float, default=0.9)
    return p.parse_args()


def mlp():
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(mx.sym.flatten(data), num_hidden=128, name="fc1")
    net = mx.sym.Dropout(mx.sym.Activation(net, act_type="relu"), p=0.3)
    net = mx.sym.FullyConnected(net, num_hidden=64, name="fc2")
    net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc3")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def iterator(images, labels, batch_size, shuffle):
    return mx.io.NDArrayIter(images.reshape(len(images), -1).astype("float32") / 255.0,
                             labels.astype("float32"), batch_size=batch_size, shuffle=shuffle,
                             label_name="softmax_label", last_batch_handle="discard")


def main():
    args = parse_args()
    logging.basicConfig(level=logging.WARNING)
    hvd.init()

    train_x, train_y = digits_data.shard(*digits_data.load(args.data_dir, "train"),
                                         hvd.rank(), hvd.size())
    test_x, test_y = digits_data.load(args.data_dir, "test")
    train_iter = iterator(train_x, train_y, args.batch_size, shuffle=True)
    test_iter = iterator(test_x, test_y, args.batch_size, shuffle=False)

    mod = mx.mod.Module(mlp(), context=mx.cpu())
    mod.bind(data_shapes=train_iter.provide_data, label_shapes=train_iter.provide_label)
    mx.random.seed(hvd.rank())  # different initial weights per rank: the broadcast matters
    np.random.seed(hvd.rank())  # NDArrayIter's shuffling
    mod.init_params(mx.init.Xavier(magnitude=2))
    # Horovod: start every rank from rank 0's weights.
    arg_params, aux_params = mod.get_params()
    hvd.broadcast_parameters(arg_params, root_rank=0)
    hvd.broadcast_parameters(aux_params, root_rank=0, prefix="aux.")
    mod.set_params(arg_params, aux_params)

    # Horovod: scale the learning rate by the number of ranks and wrap the
    # optimizer, which then averages every gradient over the ranks.
    opt = mx.optimizer.create("adam", learning_rate=args.lr * hvd.size(),
                              rescale_grad=1.0 / args.batch_size)
    opt = hvd.DistributedOptimizer(opt)

    metric = mx.metric.CrossEntropy()

    def report(epoch, symbol, arg, aux):
        # Horovod: average the epoch's training loss over the ranks.
        ce = hvd.allreduce(mx.nd.array([metric.get()[1]]), name="epoch_ce").asscalar()
        if hvd.rank() == 0:
            print(f"epoch {epoch + 1}: cross-entropy {ce:.4f}", flush=True)

    mod.fit(train_iter, eval_metric=metric, optimizer=opt, kvstore=None,
            num_epoch=args.epochs, epoch_end_callback=report)

    acc = dict(mod.score(test_iter, mx.metric.Accuracy()))["accuracy"]
    if hvd.rank() == 0:
        print(f"final test accuracy {100 * acc:.2f}%", flush=True)
    hvd.shutdown()
    return 0 if acc > args.min_accuracy else 1


if __name__ == "__main__":
    sys.exit(main())
