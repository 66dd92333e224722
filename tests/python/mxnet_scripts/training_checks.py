"""Training with horovod.mxnet: broadcast_parameters on Gluon blocks
(deferred initialization too), DistributedTrainer and DistributedOptimizer
(in gluon.Trainer and in mx.mod.Module.fit) ending at the parameters of a
single-process run on the concatenated batch, and the seeds' Module script
shape on digits-like data:
    horovodrun -np N .venv-mxnet/bin/python tests/python/mxnet_scripts/training_checks.py
Every batch is a function of the step, the same on every rank; rank r
trains on rows [r * LOCAL, (r + 1) * LOCAL), the reference on all of them."""
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "job_lib"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "mxnet"))

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from mxnet import autograd, gluon  # noqa: E402

import horovod.mxnet as hvd  # noqa: E402
import digits_data  # noqa: E402
from check_harness import check, close, main  # noqa: E402

IN, HIDDEN, OUT = 6, 16, 3
LOCAL, STEPS = 4, 4
ROOT_SEED = 7  # rank 0's initial weights; every reference starts there

warnings.filterwarnings("ignore", message=".*Optimizer created manually.*")


def batch(step):
    rng = np.random.default_rng(100 + step)
    x = rng.normal(size=(LOCAL * hvd.size(), IN)).astype("float32")
    return x, rng.integers(0, OUT, size=LOCAL * hvd.size()).astype("float32")


def shard(array):
    return array[hvd.rank() * LOCAL:(hvd.rank() + 1) * LOCAL]


def mlp(seed):
    mx.random.seed(seed)
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(HIDDEN, in_units=IN, activation="tanh"),
            gluon.nn.Dense(OUT, in_units=HIDDEN))
    net.initialize(mx.init.Xavier())
    return net


def values(net):
    return [p.data().asnumpy() for _, p in sorted(net.collect_params().items())]


def same_on_every_rank(arrays, what):
    for i, a in enumerate(arrays):
        t = mx.nd.array(a)
        spread = (hvd.allreduce(t, op=hvd.Max) - hvd.allreduce(t, op=hvd.Min)).abs().max()
        assert spread.asscalar() == 0, f"{what}: array {i} differs across ranks by {spread}"


def train(net, trainer, steps, full_batch):
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    for step in range(steps):
        x, y = batch(step)
        if not full_batch:
            x, y = shard(x), shard(y)
        with autograd.record():
            loss = loss_fn(net(mx.nd.array(x)), mx.nd.array(y))
        loss.backward()
        trainer.step(len(x))


def check_matches_reference(make_trainer, make_reference_optimizer, what, tol=1e-5):
    """Trains a distributed copy (rank-dependent initial weights, broadcast
    from rank 0) and a local single-process reference from rank 0's weights
    on the concatenated batch; their parameters must agree."""
    net = mlp(ROOT_SEED + hvd.rank())
    hvd.broadcast_parameters(net.collect_params(), root_rank=0, prefix=what + ".")
    train(net, make_trainer(net.collect_params()), STEPS, full_batch=False)
    ref = mlp(ROOT_SEED)
    train(ref, gluon.Trainer(ref.collect_params(), make_reference_optimizer(), kvstore=None),
          STEPS, full_batch=True)
    for i, (got, want) in enumerate(zip(values(net), values(ref))):
        close(got, want, f"{what}: parameter {i}", tol)
    same_on_every_rank(values(net), what)


def sgd():
    return mx.optimizer.SGD(learning_rate=0.5, momentum=0.9)


def adam():
    return mx.optimizer.Adam(learning_rate=0.05)


@check
def broadcast_parameters_of_gluon_blocks_including_deferred_ones():
    mx.random.seed(hvd.rank())
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(5, in_units=3), gluon.nn.Dense(4))  # the second is deferred
    net.initialize()
    root = hvd.size() - 1
    hvd.broadcast_parameters(net.collect_params(), root_rank=root, prefix="bp.")
    net(mx.nd.ones((2, 3)))  # initializes the deferred layer, which broadcasts it
    params = values(net)
    same_on_every_rank(params, "Gluon block parameters")
    root_params = [hvd.broadcast(mx.nd.array(p), root_rank=root).asnumpy() for p in params]
    for i, (p, r) in enumerate(zip(params, root_params)):
        close(p, r, f"parameter {i} is not rank {root}'s")
    # dicts of NDArrays (Module.get_params()), with a prefix
    arrays = {"w": mx.nd.ones((3, 2)) * hvd.rank(), "b": mx.nd.ones((2,)) * (hvd.rank() + 1)}
    hvd.broadcast_parameters(arrays, root_rank=root, prefix="dict.")
    close(arrays["w"].asnumpy(), np.full((3, 2), root), "dict entry w")
    close(arrays["b"].asnumpy(), np.full((2,), root + 1), "dict entry b")


@check
def distributed_trainer_matches_single_process():
    check_matches_reference(
        lambda params: hvd.DistributedTrainer(params, "sgd",
                                              {"learning_rate": 0.5, "momentum": 0.9}),
        sgd, "trainer")


@check
def distributed_trainer_grouped_with_predivide_matches_single_process():
    check_matches_reference(
        lambda params: hvd.DistributedTrainer(params, adam(), num_groups=2,
                                              gradient_predivide_factor=2.0, prefix="g."),
        adam, "grouped trainer", tol=1e-4)


@check
def distributed_trainer_fp16_compression_stays_close():
    check_matches_reference(
        lambda params: hvd.DistributedTrainer(params, sgd(), compression=hvd.Compression.fp16,
                                              prefix="fp16."),
        sgd, "fp16 trainer", tol=2e-2)


@check
def distributed_optimizer_in_gluon_trainer_matches_single_process():
    check_matches_reference(
        lambda params: gluon.Trainer(params, hvd.DistributedOptimizer(sgd()), kvstore=None),
        sgd, "optimizer")
    check_matches_reference(
        lambda params: gluon.Trainer(params, hvd.DistributedOptimizer(adam(), num_groups=1),
                                     kvstore=None),
        adam, "grouped optimizer", tol=1e-4)


def symbolic_mlp(hidden, classes):
    net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=hidden, name="fc1")
    net = mx.sym.FullyConnected(mx.sym.Activation(net, act_type="tanh"), num_hidden=classes,
                                name="fc2")
    return mx.sym.SoftmaxOutput(net, name="softmax")


def module(iterator, seed):
    mod = mx.mod.Module(symbolic_mlp(HIDDEN, OUT), context=mx.cpu())
    mod.bind(data_shapes=iterator.provide_data, label_shapes=iterator.provide_label)
    mx.random.seed(seed)
    mod.init_params(mx.init.Xavier())
    return mod


def module_params(mod):
    arg, _ = mod.get_params()
    return [arg[k].asnumpy() for k in sorted(arg)]


@check
def module_fit_with_distributed_optimizer_matches_single_process():
    xs, ys = zip(*[batch(step) for step in range(STEPS)])
    x, y = np.concatenate(xs), np.concatenate(ys)
    mine = np.concatenate([shard(b) for b in xs]), np.concatenate([shard(b) for b in ys])
    it = mx.io.NDArrayIter(*mine, batch_size=LOCAL, label_name="softmax_label")
    mod = module(it, ROOT_SEED + hvd.rank())
    arg, aux = mod.get_params()
    hvd.broadcast_parameters(arg, root_rank=0, prefix="mod.")
    mod.set_params(arg, aux)
    opt = hvd.DistributedOptimizer(mx.optimizer.SGD(learning_rate=0.5, momentum=0.9,
                                                    rescale_grad=1.0 / LOCAL))
    mod.fit(it, optimizer=opt, kvstore=None, num_epoch=1)
    ref_it = mx.io.NDArrayIter(x, y, batch_size=LOCAL * hvd.size(), label_name="softmax_label")
    ref = module(ref_it, ROOT_SEED)
    ref.fit(ref_it, optimizer=mx.optimizer.SGD(learning_rate=0.5, momentum=0.9,
                                               rescale_grad=1.0 / (LOCAL * hvd.size())),
            kvstore=None, num_epoch=1)
    for i, (got, want) in enumerate(zip(module_params(mod), module_params(ref))):
        close(got, want, f"Module parameter {i}")


@check
def module_fit_on_digits_loss_falls_and_ranks_agree():
    # The seeds' script shape: Module(...).fit(train_iter, optimizer=hvd-wrapped adam).
    images, labels = digits_data.synthetic_digits(1024, side=8, seed=3)
    images, labels = digits_data.shard(images, labels, hvd.rank(), hvd.size())
    it = mx.io.NDArrayIter(images.reshape(len(images), -1).astype("float32") / 255.0,
                           labels.astype("float32"), batch_size=32,
                           label_name="softmax_label", last_batch_handle="discard")
    mod = mx.mod.Module(symbolic_mlp(32, 10), context=mx.cpu())
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mx.random.seed(hvd.rank())
    mod.init_params(mx.init.Xavier())
    arg, aux = mod.get_params()
    hvd.broadcast_parameters(arg, root_rank=0, prefix="digits.")
    mod.set_params(arg, aux)
    opt = hvd.DistributedOptimizer(mx.optimizer.create("adam", learning_rate=0.01,
                                                       rescale_grad=1.0 / 32))
    metric = mx.metric.CrossEntropy()
    losses = []
    mod.fit(it, optimizer=opt, kvstore=None, num_epoch=4, eval_metric=metric,
            epoch_end_callback=lambda *args: losses.append(metric.get()[1]))
    assert losses[-1] < 0.5 * losses[0], f"cross-entropy did not fall: {losses}"
    same_on_every_rank(module_params(mod), "Module parameters after fit")


if __name__ == "__main__":
    sys.exit(main(hvd))
