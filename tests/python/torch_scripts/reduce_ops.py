"""allreduce and reducescatter (plain, grouped, in-place, async) over every
dtype x reduce op x size, with pre/postscale; results checked against values
computed locally from f(rank, index)."""
import torch

import horovod.torch as hvd
from _common import (NUMERIC_DTYPES, OPS, SIZES, check, check_equal, expect_raises,
                     reduce_like_core, run, scatter_rows, values)

# (prescale, postscale) pairs checked besides (1, 1); integer results truncate.
SCALES = [(2.0, 0.5), (0.5, 3.0)]


def cases():
    for dtype in NUMERIC_DTYPES:
        for op_name, op in OPS.items():
            for pre, post in [(1.0, 1.0)] + (SCALES if op_name in ("Sum", "Average") else []):
                yield dtype, op_name, op, pre, post


def all_inputs(dtype, op, n, shape, shift=0):
    count = 1
    for d in shape:
        count *= d
    return [values(dtype, r, count, product=op == hvd.Product, shift=shift).reshape(shape)
            for r in range(hvd.size())]


def test_allreduce_all_dtypes_ops_sizes():
    r = hvd.rank()
    pending = []
    for dtype, op_name, op, pre, post in cases():
        for n in SIZES:
            inputs = all_inputs(dtype, op, n, (n,))
            name = f"ar.{dtype}.{op_name}.{pre}.{post}.{n}"
            h = hvd.allreduce_async(inputs[r], name=name, op=op, prescale_factor=pre,
                                    postscale_factor=post)
            pending.append((h, reduce_like_core(inputs, op, pre, post), inputs[r], name))
    for h, want, inp, name in pending:
        check_equal(hvd.synchronize(h), want, name)
        # the input of an out-of-place op is unchanged
        check_equal(inp, all_inputs(inp.dtype, hvd.Product if ".Product." in name else hvd.Sum,
                                    inp.numel(), tuple(inp.shape))[r], f"{name} input unchanged")


def test_allreduce_blocking_inplace_noncontiguous():
    r = hvd.rank()
    for dtype in NUMERIC_DTYPES:
        inputs = all_inputs(dtype, hvd.Sum, 15, (3, 5))
        want = reduce_like_core(inputs, hvd.Sum)
        x = inputs[r].clone()
        check_equal(hvd.allreduce(x, op=hvd.Sum, name=f"blk.{dtype}"), want, f"allreduce {dtype}")
        check_equal(x, inputs[r], f"allreduce leaves input {dtype}")
        y = inputs[r].clone()
        out = hvd.allreduce_(y, op=hvd.Sum, name=f"inpl.{dtype}")
        check(out is y, "allreduce_ returns its argument")
        check_equal(y, want, f"allreduce_ {dtype}")
        # non-contiguous: a transposed view; in place writes back through the view
        base = inputs[r].t().contiguous()
        view = base.t()
        check(not view.is_contiguous(), "view is non-contiguous")
        check_equal(hvd.allreduce(view, op=hvd.Sum, name=f"nc.{dtype}"), want, f"nc {dtype}")
        hvd.allreduce_(view, op=hvd.Sum, name=f"ncinpl.{dtype}")
        check_equal(base.t(), want, f"non-contiguous allreduce_ {dtype}")
    # average default and the deprecated `average` flag
    x = torch.full((4,), float(r))
    check_equal(hvd.allreduce(x, name="avg.default"),
                torch.full((4,), sum(range(hvd.size())) / hvd.size()), "default op Average")
    check_equal(hvd.allreduce(x, average=False, name="avg.false"),
                torch.full((4,), float(sum(range(hvd.size())))), "average=False is Sum")
    expect_raises(ValueError, lambda: hvd.allreduce(x, average=True, op=hvd.Sum), "op and average")


def test_grouped_allreduce():
    r = hvd.rank()
    shapes = [(0,), (1,), (7,), (33, 31), (2, 3, 4)]
    for dtype in NUMERIC_DTYPES:
        per_rank = [[values(dtype, q, int(torch.Size(s).numel()), shift=i).reshape(s)
                     for i, s in enumerate(shapes)] for q in range(hvd.size())]
        wants = [reduce_like_core([per_rank[q][i] for q in range(hvd.size())], hvd.Sum)
                 for i in range(len(shapes))]
        outs = hvd.grouped_allreduce(per_rank[r], op=hvd.Sum, name=f"g.{dtype}")
        for i, (o, w) in enumerate(zip(outs, wants)):
            check_equal(o, w, f"grouped_allreduce {dtype} #{i}")
        mine = [t.clone() for t in per_rank[r]]
        res = hvd.synchronize(hvd.grouped_allreduce_async_(mine, op=hvd.Sum, name=f"gi.{dtype}"))
        for i, (o, m, w) in enumerate(zip(res, mine, wants)):
            check(o is m, "grouped in-place returns the inputs")
            check_equal(m, w, f"grouped_allreduce_ {dtype} #{i}")
    # mixed dtypes in one group, average with scaling
    mixed = [torch.full((5,), float(r + 1)), torch.full((3,), r + 1, dtype=torch.int32)]
    total = sum(q + 1 for q in range(hvd.size()))
    outs = hvd.grouped_allreduce(mixed, op=hvd.Sum, postscale_factor=2.0, name="g.mixed")
    check_equal(outs[0], torch.full((5,), 2.0 * total), "mixed group float")
    check_equal(outs[1], torch.full((3,), 2 * total, dtype=torch.int32), "mixed group int")
    check(hvd.grouped_allreduce([]) == [], "empty group")


def test_reducescatter_all_dtypes_ops():
    r, n = hvd.rank(), hvd.size()
    pending = []
    for dtype, op_name, op, pre, post in cases():
        for d0 in [0, 1, 7, 10]:
            inputs = all_inputs(dtype, op, d0 * 3, (d0, 3))
            full = reduce_like_core(inputs, op, pre, post)
            start, rows = scatter_rows(d0, n, r)
            name = f"rs.{dtype}.{op_name}.{pre}.{post}.{d0}"
            h = hvd.reducescatter_async(inputs[r], name=name, op=op, prescale_factor=pre,
                                        postscale_factor=post)
            pending.append((h, full[start:start + rows], name))
    for h, want, name in pending:
        check_equal(hvd.synchronize(h), want, name)


def test_reducescatter_blocking_grouped_noncontiguous():
    r, n = hvd.rank(), hvd.size()
    for dtype in NUMERIC_DTYPES:
        inputs = all_inputs(dtype, hvd.Sum, 7 * 4, (7, 4))
        full = reduce_like_core(inputs, hvd.Sum)
        start, rows = scatter_rows(7, n, r)
        check_equal(hvd.reducescatter(inputs[r], op=hvd.Sum, name=f"rsb.{dtype}"),
                    full[start:start + rows], f"reducescatter {dtype}")
        view = inputs[r].t().contiguous().t()
        check_equal(hvd.reducescatter(view, op=hvd.Sum, name=f"rsnc.{dtype}"),
                    full[start:start + rows], f"non-contiguous reducescatter {dtype}")
        # grouped: uneven dim 0 per tensor (extra rows go to the lowest ranks)
        dims = [1, 5, n + 1]
        per_rank = [[values(dtype, q, d * 2, shift=d).reshape(d, 2) for d in dims]
                    for q in range(n)]
        outs = hvd.grouped_reducescatter(per_rank[r], op=hvd.Sum, name=f"grs.{dtype}")
        for i, d in enumerate(dims):
            s, k = scatter_rows(d, n, r)
            full_i = reduce_like_core([per_rank[q][i] for q in range(n)], hvd.Sum)
            check_equal(outs[i], full_i[s:s + k], f"grouped_reducescatter {dtype} #{i}")
    x = torch.arange(2 * n * 3, dtype=torch.float32).reshape(2 * n, 3) * (r + 1)
    outs = hvd.synchronize(hvd.grouped_reducescatter_async([x, x * 2], name="grs.avg"))
    mean_scale = sum(q + 1 for q in range(n)) / n
    base = torch.arange(2 * n * 3, dtype=torch.float32).reshape(2 * n, 3)[2 * r:2 * r + 2]
    check_equal(outs[0], base * mean_scale, "grouped reducescatter average #0", atol=1e-5)
    check_equal(outs[1], base * 2 * mean_scale, "grouped reducescatter average #1", atol=1e-5)
    # default op is Average; compression round-trips through fp16
    y = hvd.reducescatter(x, compression=hvd.Compression.fp16, name="rs.fp16")
    check_equal(y, base * mean_scale, "reducescatter fp16 compression", atol=1e-2)


def test_reducescatter_errors():
    expect_raises(ValueError, lambda: hvd.reducescatter(torch.tensor(1.0)), "scalar reducescatter")
    # NotImplementedError: a RuntimeError, which upstream's callers catch.
    expect_raises(NotImplementedError, lambda: hvd.reducescatter_async(torch.ones(4), op=hvd.Adasum),
                  "Adasum reducescatter", match="Adasum")
    expect_raises(ValueError, lambda: hvd.grouped_reducescatter([torch.ones(2), torch.tensor(2.0)]),
                  "scalar in grouped reducescatter")


run([test_allreduce_all_dtypes_ops_sizes, test_allreduce_blocking_inplace_noncontiguous,
     test_grouped_allreduce, test_reducescatter_all_dtypes_ops,
     test_reducescatter_blocking_grouped_noncontiguous, test_reducescatter_errors])
