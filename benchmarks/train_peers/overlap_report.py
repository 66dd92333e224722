"""When do gradients become ready inside loss.backward(), and how much of the
allreduce time does horovod_accel's DistributedOptimizer hide? Used by
train_worker.py --mode hvda --overlap-report, after its timed loop.

The optimizer hooks every parameter with register_post_accumulate_grad_hook
and submits a bucket's allreduce once all of its parameters are ready, so
communication can only overlap the part of backward that runs after the
first bucket's submission. ReadyRecorder puts a hook of its own on every
parameter before the optimizer does (hooks run in registration order), so its
timestamp is the moment the gradient is accumulated, before the optimizer's
hook submits anything.

measure() runs `iters` pairs of steps, on every rank alike, each step
after a barrier (so the ranks start it together, as after a step's last
allreduce):
  A  the real step (zero_grad, forward, loss.backward(), opt.step()), with
     the time of every gradient's readiness relative to backward's start;
  B  the same work with nothing overlapped: gradients from
     torch.autograd.grad (no hooks fire, nothing is submitted), then after a
     barrier opt.synchronize() alone (every bucket submitted at once: the
     communication by itself), then the wrapped SGD step alone.
Per step, medians over the steps, averaged over ranks:
  first/last_ready_pct   first/last gradient ready, % of backward's time
  first/last_submit_pct  first/last bucket complete (its allreduce submitted)
  bwd_ms, step_ms        phase A: loss.backward(); opt.step() (wait + SGD)
  bwd_only_ms, comm_only_ms, sgd_ms   phase B
  exposed_ms   (bwd + step) - (bwd_only + sgd): what communication added
  hidden_pct   100 x (1 - exposed / comm_only)
"""
import statistics
import time

import torch
import torch.nn.functional as F


class ReadyRecorder:
    """Timestamps of each parameter's post-accumulate-grad hook."""

    def __init__(self, model):
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.index = {p: i for i, p in enumerate(self.params)}
        self.stamps = [None] * len(self.params)
        self.enabled = False
        for i, p in enumerate(self.params):
            p.register_post_accumulate_grad_hook(lambda _, i=i: self._ready(i))

    def _ready(self, i):
        if self.enabled:
            self.stamps[i] = time.perf_counter()

    def reset(self):
        self.stamps = [None] * len(self.params)


def _median(xs):
    return statistics.median(xs) if xs else float("nan")


def measure(model, opt, data, target, recorder, hvd, iters):
    """The dict described in the module docstring (every rank must call it)."""
    params = recorder.params
    buckets = [[recorder.index[p] for p in b.params if p in recorder.index]
               for b in getattr(opt, "_hvd_buckets", ())]      # read only
    real = {k: [] for k in ("bwd", "step", "first", "last", "first_sub", "last_sub")}
    alone = {"bwd_only": [], "comm_only": [], "sgd": []}
    for _ in range(iters):      # A and B alternate, so drifting load hits both alike
        # A: the real step.
        opt.zero_grad()
        hvd.barrier()
        loss = F.cross_entropy(model(data), target)
        recorder.reset()
        recorder.enabled = True
        t0 = time.perf_counter()
        loss.backward()
        t1 = time.perf_counter()
        opt.step()
        t2 = time.perf_counter()
        recorder.enabled = False
        if None in recorder.stamps:
            raise RuntimeError("a parameter's gradient hook did not fire")
        ready = [s - t0 for s in recorder.stamps]
        bwd = t1 - t0
        real["bwd"].append(bwd)
        real["step"].append(t2 - t1)
        real["first"].append(min(ready) / bwd)
        real["last"].append(max(ready) / bwd)
        if buckets:
            subs = [max(ready[i] for i in bk) for bk in buckets if bk]
            real["first_sub"].append(min(subs) / bwd)
            real["last_sub"].append(max(subs) / bwd)
        # B: the same work, nothing overlapped.
        opt.zero_grad()
        hvd.barrier()
        loss = F.cross_entropy(model(data), target)
        t0 = time.perf_counter()
        grads = torch.autograd.grad(loss, params)
        alone["bwd_only"].append(time.perf_counter() - t0)
        for p, g in zip(params, grads):
            p.grad = g
        hvd.barrier()
        t0 = time.perf_counter()
        opt.synchronize()
        t1 = time.perf_counter()
        with opt.skip_synchronize():
            opt.step()
        t2 = time.perf_counter()
        alone["comm_only"].append(t1 - t0)
        alone["sgd"].append(t2 - t1)

    def ms(xs):
        return 1e3 * _median(xs)

    def pct(xs):
        return 100 * _median(xs)

    out = {"first_ready_pct": pct(real["first"]), "last_ready_pct": pct(real["last"]),
           "first_submit_pct": pct(real["first_sub"]), "last_submit_pct": pct(real["last_sub"]),
           "bwd_ms": ms(real["bwd"]), "step_ms": ms(real["step"]),
           "bwd_step_ms": ms([x + y for x, y in zip(real["bwd"], real["step"])]),
           "bwd_only_ms": ms(alone["bwd_only"]), "comm_only_ms": ms(alone["comm_only"]),
           "sgd_ms": ms(alone["sgd"])}
    keys = sorted(out)
    avg = hvd.allreduce(torch.tensor([out[k] for k in keys], dtype=torch.float64),
                        op=hvd.Average, name="overlap_report").tolist()
    out = dict(zip(keys, avg))
    out["exposed_ms"] = out["bwd_step_ms"] - out["bwd_only_ms"] - out["sgd_ms"]
    out["hidden_pct"] = (100 * (1 - out["exposed_ms"] / out["comm_only_ms"])
                         if out["comm_only_ms"] > 0 else float("nan"))
    out["buckets"] = len(buckets)
    return out
