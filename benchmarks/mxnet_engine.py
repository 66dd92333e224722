"""Why horovod.mxnet runs its collectives on MXNet's engine (docs/mxnet.md,
"Asynchrony"): the engine library against the pure-Python alternative, at
np 2, in the same processes.

    horovodrun -np 2 .venv-mxnet/bin/python benchmarks/mxnet_engine.py [--repeats 3]
    # with --torch-site <site-packages with torch> also the torch adapter's 4 KiB allreduce

Variants:
- engine: hvd.allreduce_ (libhvda_mxnet.so): the call pushes an engine
  operation and returns; reading the result waits for it.
- python: the pure-Python path a CPU adapter could take without the library
  (`python_allreduce_` below): wait_to_read() on the input, its address, the
  core's allreduce through common/handles.py, synchronize(). It must block
  per op: MXNet cannot be told that a Python-side op writes an NDArray, so
  returning earlier would let MXNet read it half-written.
- python-batched: what a pure-Python DistributedTrainer could do instead,
  since it owns the point where gradients are next read: wait for every
  gradient, submit them all, synchronize them all.
- torch: the torch adapter's allreduce_ of a torch tensor (only with
  --torch-site).

Printed: per measurement the median over repeats of the per-repeat median
(iterations timed on every rank, max over ranks), with the spread over
repeats; the Gluon step also as a share of the step without communication.
"""
import argparse
import statistics
import sys
import time

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

import horovod.mxnet as hvd
from horovod_accel.common.default_runtime import DEFAULT_RUNTIME
from horovod_accel.common.handles import KeepAlive, submit_allreduce, synchronize
from horovod_accel.mxnet import tensors as _t


def python_submit_(tensor, name):
    """Starts the pure-Python in-place Sum of `tensor`; returns the handle.
    Blocks until MXNet has written the tensor."""
    ptr = _t.host_pointer(tensor)
    rt = DEFAULT_RUNTIME.enqueue_runtime()
    return submit_allreduce("pyallreduce", name, rt.enqueue_allreduce, 0, ptr, ptr,
                            _t.dtype_code(tensor), _t.shape_of(tensor), -1, hvd.Sum, 1.0, 1.0,
                            KeepAlive(tensor, tensor))


def python_allreduce_(tensor, name):
    return synchronize(python_submit_(tensor, name))


def timed(fn, iters, warmup):
    """Median over iterations of the max over ranks of fn()'s time."""
    for i in range(warmup):
        fn(i)
    hvd.barrier()
    times = []
    for i in range(iters):
        t0 = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t0)
    worst = hvd.allreduce(mx.nd.array(times, dtype="float64"), op=hvd.Max, name="bench.times")
    return float(np.median(worst.asnumpy()))


def latency(variant, nbytes, iters):
    t = mx.nd.zeros((nbytes // 4,))
    if variant == "engine":
        def fn(i):
            hvd.allreduce_(t, op=hvd.Sum, name="lat")
            t.wait_to_read()
    else:
        def fn(i):
            python_allreduce_(t, "lat")
    return timed(fn, iters, max(2, iters // 10))


def push_cost(nbytes, iters):
    """Time of the hvd.allreduce_ call alone (the op completes afterwards)."""
    ts = [mx.nd.zeros((nbytes // 4,)) for _ in range(iters)]
    hvd.barrier()
    t0 = time.perf_counter()
    for k, t in enumerate(ts):
        hvd.allreduce_(t, op=hvd.Sum, name=f"push{k}")
    per_call = (time.perf_counter() - t0) / iters
    mx.nd.waitall()
    return per_call


def torch_latency(nbytes, iters):
    import torch  # noqa: PLC0415 (optional peer)
    import horovod.torch as hvd_torch  # noqa: PLC0415
    t = torch.zeros(nbytes // 4)
    return timed(lambda i: hvd_torch.allreduce_(t, op=hvd_torch.Sum, name="tlat"), iters,
                 max(2, iters // 10))


def batch(variant, count, nbytes, iters):
    ts = [mx.nd.zeros((nbytes // 4,)) for _ in range(count)]
    if variant == "engine":
        def fn(i):
            for k, t in enumerate(ts):
                hvd.allreduce_(t, op=hvd.Sum, name=f"b{k}")
            mx.nd.waitall()
    elif variant == "python":
        def fn(i):
            for k, t in enumerate(ts):
                python_allreduce_(t, f"b{k}")
    else:  # python-batched
        def fn(i):
            handles = [python_submit_(t, f"b{k}") for k, t in enumerate(ts)]
            for h in handles:
                synchronize(h)
    return timed(fn, iters, 3)


class PythonBatchedTrainer(hvd.DistributedTrainer):
    """DistributedTrainer on the pure-Python path (python-batched)."""

    def _allreduce_grads(self):
        grads = [p.list_grad()[0] for p in self._params if p.grad_req != "null"]
        handles = [python_submit_(g, f"g{i}") for i, g in enumerate(grads)]
        for h in handles:
            synchronize(h)
        scale = 1.0 / hvd.size()
        for g in grads:
            g *= scale


def gluon_step(variant, iters, batch_size=64):
    mx.random.seed(1)
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(512, activation="relu"), gluon.nn.Dense(512, activation="relu"),
            gluon.nn.Dense(10))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    params = net.collect_params()
    opt = {"learning_rate": 0.01}
    trainer = {"no-communication": lambda: gluon.Trainer(params, "sgd", opt, kvstore=None),
               "engine": lambda: hvd.DistributedTrainer(params, "sgd", opt),
               "python-batched": lambda: PythonBatchedTrainer(params, "sgd", opt)}[variant]()
    x = mx.nd.random.uniform(shape=(batch_size, 784))
    y = mx.nd.array(np.arange(batch_size) % 10)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    in_step = []  # time the Python thread spends inside trainer.step

    def fn(i):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        t0 = time.perf_counter()
        trainer.step(batch_size)
        in_step.append(time.perf_counter() - t0)
        mx.nd.waitall()
    step = timed(fn, iters, 5)
    return step, float(np.median(in_step[5:]))


def report(label, values, unit=1e-6, suffix="us"):
    med = statistics.median(values)
    if hvd.rank() == 0:
        print(f"{label:48s} {med / unit:10.1f} {suffix}  (spread {min(values) / unit:.1f}.."
              f"{max(values) / unit:.1f} over {len(values)} repeats)", flush=True)
    return med


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--torch-site", default=None,
                   help="a site-packages folder with torch, for the torch adapter's peer")
    args = p.parse_args()
    hvd.init()
    results = {}

    def run(label, fn):
        results[label] = [fn() for _ in range(args.repeats)]
        return report(label, results[label])

    for nbytes, iters, tag in [(4096, 300, "4 KiB"), (16 << 20, 20, "16 MiB")]:
        for variant in ("engine", "python"):
            run(f"allreduce {tag} {variant}", lambda: latency(variant, nbytes, iters))
    run("allreduce 4 KiB engine: the call alone (push)", lambda: push_cost(4096, 300))
    if args.torch_site:
        sys.path.append(args.torch_site)
        run("allreduce 4 KiB torch adapter", lambda: torch_latency(4096, 300))
    for variant in ("engine", "python", "python-batched"):
        run(f"32 x 64 KiB allreduces {variant}", lambda: batch(variant, 32, 64 << 10, 30))
    for variant in ("no-communication", "engine", "python-batched"):
        runs = [gluon_step(variant, 40) for _ in range(args.repeats)]
        step = report(f"gluon MLP step {variant}", [r[0] for r in runs])
        report("  of which in trainer.step() (Python thread)", [r[1] for r in runs])
        if variant == "no-communication":
            ideal = step
        elif hvd.rank() == 0:
            print(f"{'':48s} {100 * ideal / step:10.1f} %  of the no-communication throughput",
                  flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
