"""Gradients of every differentiable op, checked against the expected rule:
each rank's loss is sum(output * W_rank) with W a function of the rank, so
the expected input gradient is computed locally."""
import torch

import horovod.torch as hvd
from _common import check, check_equal, expect_raises, run


def weights(rank, shape, shift=0):
    n = int(torch.Size(shape).numel())
    return ((torch.arange(n, dtype=torch.float64) + shift) % 7 - 3 + rank).reshape(shape)


def leaf(rank, shape):
    return weights(rank + 10, shape).requires_grad_()


def test_allreduce_grad():
    r, n = hvd.rank(), hvd.size()
    shape = (4, 3)
    all_w = torch.stack([weights(q, shape) for q in range(n)])
    for op, pre, post, want in [(hvd.Sum, 1.0, 1.0, all_w.sum(0)),
                                (hvd.Average, 1.0, 1.0, all_w.mean(0)),
                                (hvd.Sum, 2.0, 0.25, all_w.sum(0) * 0.5),
                                (hvd.Average, 0.5, 3.0, all_w.mean(0) * 1.5)]:
        x = leaf(r, shape)
        y = hvd.allreduce(x, op=op, prescale_factor=pre, postscale_factor=post)
        (y * weights(r, shape)).sum().backward()
        check_equal(x.grad, want, f"allreduce grad op {op} pre {pre} post {post}", atol=1e-12)
    xs = [leaf(r, (2,)), leaf(r, (3, 2))]
    ys = hvd.grouped_allreduce(xs, op=hvd.Sum)
    sum(((y * weights(r, y.shape)).sum() for y in ys)).backward()
    for i, x in enumerate(xs):
        want = torch.stack([weights(q, x.shape) for q in range(n)]).sum(0)
        check_equal(x.grad, want, f"grouped_allreduce grad #{i}", atol=1e-12)


def test_allgather_grad():
    r, n = hvd.rank(), hvd.size()
    total = sum(q + 1 for q in range(n))
    x = leaf(r, (r + 1, 2))
    y = hvd.allgather(x)
    (y * weights(r, (total, 2))).sum().backward()
    mean_w = torch.stack([weights(q, (total, 2)) for q in range(n)]).mean(0)
    start = sum(q + 1 for q in range(r))
    check_equal(x.grad, mean_w[start:start + r + 1], "allgather grad (average)", atol=1e-12)
    xs = [leaf(r, (r + 1, 2)), leaf(r, (1,))]
    ys = hvd.grouped_allgather(xs)
    sum(((y * weights(r, y.shape, i)).sum() for i, y in enumerate(ys))).backward()
    check_equal(xs[0].grad, mean_w[start:start + r + 1], "grouped_allgather grad #0", atol=1e-12)
    mean_1 = torch.stack([weights(q, (n,), 1) for q in range(n)]).mean(0)
    check_equal(xs[1].grad, mean_1[r:r + 1], "grouped_allgather grad #1", atol=1e-12)


def test_broadcast_grad():
    r, n = hvd.rank(), hvd.size()
    for root in range(n):
        x = leaf(r, (5,))
        y = hvd.broadcast(x, root)
        (y * weights(r, (5,))).sum().backward()
        mean_w = torch.stack([weights(q, (5,)) for q in range(n)]).mean(0)
        want = mean_w if r == root else torch.zeros(5, dtype=torch.float64)
        check_equal(x.grad, want, f"broadcast grad root {root}", atol=1e-12)


def _splits(src, n):
    return [(src + dst) % 3 + (1 if dst == 0 else 0) for dst in range(n)]


def test_alltoall_grad():
    r, n = hvd.rank(), hvd.size()

    def g(dst, src):  # weight of the rows dst received from src
        return weights(dst * 7 + src, (_splits(src, n)[dst], 2))

    splits = _splits(r, n)
    x = leaf(r, (sum(splits), 2))
    y, recv = hvd.alltoall(x, splits=splits)
    check(not recv.requires_grad, "received splits are not differentiable")
    (y * torch.cat([g(r, s) for s in range(n)])).sum().backward()
    check_equal(x.grad, torch.cat([g(d, r) for d in range(n)]), "alltoall grad")
    # equal split, output only
    x = leaf(r, (2 * n, 3))
    y = hvd.alltoall(x)
    (y * weights(r, y.shape)).sum().backward()
    want = torch.cat([weights(d, (2 * n, 3))[2 * r:2 * r + 2] for d in range(n)])
    check_equal(x.grad, want, "alltoall equal-split grad")


def test_reducescatter_grad():
    r, n = hvd.rank(), hvd.size()
    d0 = 2 * n + 1

    def rows_of(q):
        counts = [d0 // n + (1 if j < d0 % n else 0) for j in range(n)]
        return counts[q]

    for op, pre, post, factor in [(hvd.Sum, 1.0, 1.0, 1.0), (hvd.Average, 1.0, 1.0, 1.0 / n),
                                  (hvd.Sum, 2.0, 0.5, 1.0), (hvd.Average, 3.0, 2.0, 6.0 / n)]:
        x = leaf(r, (d0, 2))
        y = hvd.reducescatter(x, op=op, prescale_factor=pre, postscale_factor=post)
        (y * weights(r, (rows_of(r), 2))).sum().backward()
        want = torch.cat([weights(q, (rows_of(q), 2)) for q in range(n)]) * factor
        check_equal(x.grad, want, f"reducescatter grad op {op} pre {pre} post {post}", atol=1e-12)
    xs = [leaf(r, (d0, 2)), leaf(r, (n, 1))]
    ys = hvd.grouped_reducescatter(xs, op=hvd.Sum)
    sum(((y * weights(r, y.shape, i)).sum() for i, y in enumerate(ys))).backward()
    check_equal(xs[0].grad, torch.cat([weights(q, (rows_of(q), 2)) for q in range(n)]),
                "grouped_reducescatter grad #0", atol=1e-12)
    check_equal(xs[1].grad, torch.cat([weights(q, (1, 1), 1) for q in range(n)]),
                "grouped_reducescatter grad #1", atol=1e-12)
    x = leaf(r, (n, 2))
    y = hvd.reducescatter(x, op=hvd.Max)
    expect_raises(NotImplementedError, lambda: y.sum().backward(), "Max reducescatter grad")


run([test_allreduce_grad, test_allgather_grad, test_broadcast_grad, test_alltoall_grad,
     test_reducescatter_grad])
