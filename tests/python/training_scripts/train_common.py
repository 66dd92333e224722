"""Helpers shared by the training check scripts (run by test_torch_training.py
through horovodrun; every rank runs the same script).

The reference for every data-parallel check is computed locally on every
rank, without communication: all ranks generate the same global data (fixed
seeds), so each rank can also train a single-process copy of the model on
what all ranks together saw and compare its DistributedOptimizer-trained
parameters with that copy.
"""
import copy
import sys
import traceback
import warnings

import torch
import torch.nn as nn

import horovod.torch as hvd

CHECKS = []


def check(fn):
    """Registers a check: fn() raises AssertionError (or anything) on failure."""
    CHECKS.append(fn)
    return fn


def run_all(selected=None):
    """Runs the registered checks in order (all ranks in the same order, so
    their collectives pair up); prints PASS/FAIL lines on every rank and
    returns the process exit code. A failing check stops the run: the ranks
    may disagree on what comes next, so continuing could hang."""
    for fn in CHECKS:
        if selected and fn.__name__ not in selected:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                fn()
        except BaseException:  # noqa: BLE001 -- reported, then the rank exits non-zero
            print(f"FAIL {fn.__name__} (rank {hvd.rank()}):\n{traceback.format_exc()}",
                  file=sys.stderr, flush=True)
            return 1
        print(f"PASS {fn.__name__}", flush=True)
    return 0


def mlp(seed, dtype=torch.float64, sizes=(6, 16, 12, 3)):
    """A small MLP with identical weights on every rank for the same seed."""
    torch.manual_seed(seed)
    layers = []
    for i in range(len(sizes) - 1):
        layers += [nn.Linear(sizes[i], sizes[i + 1]), nn.Tanh()]
    return nn.Sequential(*layers[:-1]).to(dtype)


def batch(seed, n, features=6, dtype=torch.float64):
    """n samples of the global data set for `seed` (same on every rank)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, features, generator=g, dtype=dtype)
    y = torch.randn(n, 3, generator=g, dtype=dtype)
    return x, y


def shard(t, r, n):
    """Rank r's contiguous shard of t (n ranks, equal shards)."""
    per = t.shape[0] // n
    return t[r * per:(r + 1) * per]


def mse(model, x, y):
    return ((model(x) - y) ** 2).mean()


def assert_close(a, b, tol, what):
    err = (a - b).abs().max().item() if a.numel() else 0.0
    scale = max(1.0, b.abs().max().item() if b.numel() else 0.0)
    assert err <= tol * scale, f"{what}: max abs difference {err:.3g} > {tol:.3g} x {scale:.3g}"


def assert_same_params(model, ref, tol, what):
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        assert_close(p.detach(), q.detach(), tol, f"{what}: parameter {name}")


def assert_equal_across_ranks(tensors, what):
    """Every tensor equal (bit for bit) on every rank of the global set."""
    for i, t in enumerate(tensors):
        t = t.detach().to(torch.float64).reshape(-1)
        hi = hvd.allreduce(t, op=hvd.Max, name=f"eq.max.{what}.{i}")
        lo = hvd.allreduce(t, op=hvd.Min, name=f"eq.min.{what}.{i}")
        assert torch.equal(hi, lo), f"{what}: tensor {i} differs across ranks"


def train_pair(make_model, make_opt, loss_fn, steps, passes=1, dist_kwargs=None, combine="mean",
               tol=1e-9, what="train", before_step=None):
    """Trains a model with DistributedOptimizer and a local reference; compares.

    make_model() -> model (identical on every rank); make_opt(params) -> torch optimizer;
    dist_kwargs: DistributedOptimizer keyword arguments, or model -> those.
    loss_fn(model, step, pass_index, rank) -> this rank's loss for that pass.
    The reference steps on sum over passes of combine_r(loss(r)) (mean over ranks
    for Average, sum for Sum), which is what averaging/summing gradients gives.
    before_step(dist_opt) runs before each distributed step (after backward).
    Returns (model, dist_opt).
    """
    n, me = hvd.size(), hvd.rank()
    model = make_model()
    ref = copy.deepcopy(model)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    if callable(dist_kwargs):
        dist_kwargs = dist_kwargs(model)
    opt = hvd.DistributedOptimizer(make_opt(model.parameters()),
                                   named_parameters=model.named_parameters(),
                                   **(dist_kwargs or {}))
    ref_opt = make_opt(ref.parameters())
    for step in range(steps):
        opt.zero_grad()
        for k in range(passes):
            loss_fn(model, step, k, me).backward()
        if before_step is not None:
            before_step(opt)
        opt.step()

        ref_opt.zero_grad()
        total = sum(loss_fn(ref, step, k, r) for k in range(passes) for r in range(n))
        (total / n if combine == "mean" else total).backward()
        ref_opt.step()
    assert_same_params(model, ref, tol, what)
    return model, opt
