"""Adasum checks, run on every rank by tests/python/test_adasum.py:

    horovodrun -np N python tests/python/training_scripts/adasum_checks.py

Prints 'PASS <check>' per check (rank-prefixed by horovodrun); exits non-zero
at the first failure. References are computed locally in float64 from inputs
every rank can build itself (f(rank, index), or data seeded by rank), with the
same tree as the core: pairs in rank order, an unpaired node passes through.
ProcessSet([0]) is registered at init for the non-global-set check.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import horovod.torch as hvd  # noqa: E402
from train_common import (assert_close, assert_equal_across_ranks, batch, check, mlp, mse,  # noqa: E402
                          run_all)

SUBSET = hvd.ProcessSet([0])


def adasum2(a, b):
    dot, aa, bb = (a * b).sum(), (a * a).sum(), (b * b).sum()
    ca = 1 - dot / (2 * aa) if aa != 0 else 1.0
    cb = 1 - dot / (2 * bb) if bb != 0 else 1.0
    return ca * a + cb * b


def adasum_tree(vectors):
    nodes = [v.to(torch.float64) for v in vectors]
    while len(nodes) > 1:
        nodes = [adasum2(nodes[i], nodes[i + 1]) if i + 1 < len(nodes) else nodes[i]
                 for i in range(0, len(nodes), 2)]
    return nodes[0]


def value(rank, shape, seed, dtype):
    g = torch.Generator().manual_seed(1000 * seed + rank)
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)


@check
def allreduce_matches_reference():
    n, me = hvd.size(), hvd.rank()
    for seed, (dtype, tol) in enumerate([(torch.float32, 1e-5), (torch.float64, 1e-12),
                                         (torch.float16, 3e-3)]):
        t = value(me, (5, 7), seed, dtype)
        out = hvd.allreduce(t, op=hvd.Adasum, name=f"adasum.{seed}")
        want = adasum_tree([value(r, (5, 7), seed, dtype) for r in range(n)])
        assert out.dtype == dtype and out.shape == t.shape
        assert_close(out.to(torch.float64), want, tol, f"allreduce Adasum {dtype}")
        assert torch.equal(t, value(me, (5, 7), seed, dtype)), "input modified"
        # The reference from an allgather of the actual inputs, too.
        rows = hvd.allgather(t.reshape(1, -1), name=f"adasum.gather.{seed}")
        assert_close(out.to(torch.float64).reshape(-1), adasum_tree(list(rows)), tol,
                     f"allreduce Adasum vs allgather {dtype}")
        assert_equal_across_ranks([out], f"adasum {dtype}")


@check
def grouped_scaled_and_in_place():
    """Grouped tensors are fused in the core but each gets its own dot
    products; prescale/postscale apply as for allreduce; allreduce_ is in place."""
    n, me = hvd.size(), hvd.rank()
    shapes = [(3,), (4, 5), (17,)]
    tensors = [value(me, s, 10 + i, torch.float64) * (i + 1) for i, s in enumerate(shapes)]
    outs = hvd.grouped_allreduce(tensors, op=hvd.Adasum, name="adasum.group",
                                 prescale_factor=0.5, postscale_factor=4.0)
    for i, (s, out) in enumerate(zip(shapes, outs)):
        inputs = [value(r, s, 10 + i, torch.float64) * (i + 1) * 0.5 for r in range(n)]
        assert_close(out, adasum_tree(inputs) * 4.0, 1e-12, f"grouped tensor {i}")
    t = value(me, (6,), 20, torch.float32)
    same = hvd.allreduce_(t, op=hvd.Adasum, name="adasum.inplace")
    assert same is t
    assert_close(t.double(), adasum_tree([value(r, (6,), 20, torch.float32) for r in range(n)]),
                 1e-5, "allreduce_ Adasum")
    empty = hvd.allreduce(torch.empty(0, 3), op=hvd.Adasum, name="adasum.empty")
    assert empty.shape == (0, 3)
    # Identical inputs on every rank give that input; orthogonal ones add.
    same_everywhere = torch.arange(5, dtype=torch.float64)
    assert_close(hvd.allreduce(same_everywhere, op=hvd.Adasum, name="adasum.same"),
                 same_everywhere, 1e-12, "identical inputs")
    basis = torch.zeros(n, dtype=torch.float64)
    basis[me] = me + 1.0
    assert_close(hvd.allreduce(basis, op=hvd.Adasum, name="adasum.orth"),
                 torch.arange(1, n + 1, dtype=torch.float64), 1e-12, "orthogonal inputs")


@check
def argument_errors():
    for bad, exc, text in [(lambda: hvd.allreduce(torch.ones(3, dtype=torch.int32), op=hvd.Adasum,
                                                  name="adasum.int"), ValueError, "adasum.int"),
                           (lambda: hvd.allreduce(torch.ones(3), op=hvd.Adasum,
                                                  process_set=SUBSET), NotImplementedError,
                            "non-global"),
                           (lambda: hvd.reducescatter(torch.ones(4), op=hvd.Adasum),
                            NotImplementedError, "Adasum")]:
        try:
            bad()
        except exc as e:
            assert text in str(e), str(e)
        else:
            raise AssertionError(f"expected {exc.__name__} containing {text!r}")
    model = mlp(5)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), op=hvd.Adasum)
    try:
        with opt.skip_synchronize():
            pass
    except AssertionError as e:
        assert "Adasum" in str(e)
    else:
        raise AssertionError("skip_synchronize() did not raise with Adasum")
    try:
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), op=hvd.Adasum,
                                 process_set=SUBSET)
    except NotImplementedError as e:
        assert "non-global" in str(e)
    else:
        raise AssertionError("Adasum optimizer on a non-global process set did not raise")


def rank_loss(model, step, k, rank):
    x, y = batch(100 * step + 10 * k + rank, 8)
    return mse(model, x, y)


def reference_steps(model, lr, steps, passes):
    """Upstream's delta semantics with plain SGD: every rank's delta is
    -lr * (its gradient summed over passes); parameters += adasum(deltas)."""
    n = hvd.size()
    for step in range(steps):
        deltas = []
        for r in range(n):
            model.zero_grad()
            for k in range(passes):
                rank_loss(model, step, k, r).backward()
            deltas.append([-lr * p.grad.clone() for p in model.parameters()])
        with torch.no_grad():
            for i, p in enumerate(model.parameters()):
                p.add_(adasum_tree([d[i] for d in deltas]).reshape(p.shape))


@check
def optimizer_matches_delta_reference():
    for passes in (1, 2):
        model, ref = mlp(7), mlp(7)
        opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05),
                                       named_parameters=model.named_parameters(), op=hvd.Adasum,
                                       backward_passes_per_step=passes)
        for step in range(3):
            opt.zero_grad()
            for k in range(passes):
                rank_loss(model, step, k, hvd.rank()).backward()
            opt.step()
        reference_steps(ref, 0.05, 3, passes)
        for (name, p), q in zip(model.named_parameters(), ref.parameters()):
            assert_close(p.detach(), q.detach(), 1e-10, f"passes={passes} parameter {name}")
        assert_equal_across_ranks(list(model.parameters()), f"adasum sgd passes={passes}")


@check
def optimizer_trains_adam():
    """Adam (per-rank moments) with Adasum: loss on the global data falls and
    parameters stay identical on every rank; a parameter unused on one rank
    is still combined."""
    n, me = hvd.size(), hvd.rank()
    model = mlp(11)
    extra = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
    params = list(model.parameters()) + [extra]
    opt = hvd.DistributedOptimizer(torch.optim.Adam(params, lr=0.02), op=hvd.Adasum)
    x, y = batch(999, 16 * n)

    def global_loss():
        with torch.no_grad():
            return mse(model, x, y).item()

    first = global_loss()
    for step in range(30):
        opt.zero_grad()
        xs, ys = x[me::n], y[me::n]
        loss = mse(model, xs, ys)
        if me == 0:
            loss = loss + (extra * extra).sum() + extra.sum()  # extra only gets a gradient here
        loss.backward()
        opt.step()
    last = global_loss()
    assert last < 0.8 * first, f"loss did not fall: {first:.4f} -> {last:.4f}"
    assert extra.abs().sum() > 0, "parameter with a gradient only on rank 0 was not updated"
    assert_equal_across_ranks(params, "adasum adam")


def main():
    torch.set_num_threads(1)
    hvd.init(process_sets=[SUBSET])
    code = run_all(set(sys.argv[1:]))
    hvd.shutdown()
    return code


if __name__ == "__main__":
    sys.exit(main())
