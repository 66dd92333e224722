"""allgather, grouped_allgather, broadcast and alltoall over every dtype
(bool included): variable dim 0, every root, uneven splits, in-place and
non-contiguous inputs; results checked against f(rank, index)."""
import torch

import horovod.torch as hvd
from _common import ALL_DTYPES, check, check_equal, expect_raises, run, values


def rows(dtype, rank, d0, cols=3, shift=0):
    return values(dtype, rank, d0 * cols, shift=shift).reshape(d0, cols)


def test_allgather_variable_dim0():
    r, n = hvd.rank(), hvd.size()
    pending = []
    for dtype in ALL_DTYPES:
        for k, dim0 in enumerate([lambda q: q + 1, lambda q: 2 * q, lambda q: 0,
                                  lambda q: 1023 if q == 0 else 7]):
            want = torch.cat([rows(dtype, q, dim0(q)) for q in range(n)])
            h = hvd.allgather_async(rows(dtype, r, dim0(r)), name=f"ag.{dtype}.{k}")
            pending.append((h, want, f"allgather {dtype} case {k}"))
    for h, want, what in pending:
        check_equal(hvd.synchronize(h), want, what)
    # 1-D, blocking, non-contiguous
    x = torch.arange(6 * (r + 1), dtype=torch.int64).reshape(r + 1, 6)
    want = torch.cat([torch.arange(6 * (q + 1)).reshape(q + 1, 6) for q in range(n)])
    check_equal(hvd.allgather(x.t().contiguous().t(), name="ag.nc"), want, "allgather non-contig")
    check_equal(hvd.allgather(torch.full((r + 2,), r)),
                torch.cat([torch.full((q + 2,), q) for q in range(n)]), "allgather 1-D")
    # the result is a normal tensor: writable, and survives the handle
    out = hvd.allgather(torch.ones(2, 2), name="ag.writable")
    out += 1
    check_equal(out, torch.full((2 * n, 2), 2.0), "allgather output writable")
    expect_raises(ValueError, lambda: hvd.allgather(torch.tensor(3.0)), "scalar allgather")


def test_grouped_allgather():
    r, n = hvd.rank(), hvd.size()
    for dtype in ALL_DTYPES:
        shapes = [lambda q: (q + 1, 2), lambda q: (0, 4), lambda q: (3 - q % 2,)]
        mine = [values(dtype, r, int(torch.Size(s(r)).numel()), shift=i).reshape(s(r))
                for i, s in enumerate(shapes)]
        outs = hvd.grouped_allgather(mine, name=f"gag.{dtype}")
        for i, s in enumerate(shapes):
            want = torch.cat([values(dtype, q, int(torch.Size(s(q)).numel()), shift=i).reshape(s(q))
                              for q in range(n)])
            check_equal(outs[i], want, f"grouped_allgather {dtype} #{i}")
        res = hvd.synchronize(hvd.grouped_allgather_async(mine[:1], name=f"gaga.{dtype}"))
        check_equal(res[0], torch.cat([values(dtype, q, 2 * (q + 1)).reshape(q + 1, 2)
                                       for q in range(n)]), f"grouped_allgather_async {dtype}")


def test_broadcast_every_root():
    r, n = hvd.rank(), hvd.size()
    for dtype in ALL_DTYPES:
        for root in range(n):
            for size in [0, 1, 7, 1023]:
                want = values(dtype, root, size)
                mine = values(dtype, r, size)
                got = hvd.broadcast(mine, root_rank=root, name=f"bc.{dtype}.{root}.{size}")
                check_equal(got, want, f"broadcast {dtype} root {root} size {size}")
                check_equal(mine, values(dtype, r, size), "broadcast leaves input")
            x = rows(dtype, r, 4)
            out = hvd.broadcast_(x, root, name=f"bci.{dtype}.{root}")
            check(out is x, "broadcast_ returns its argument")
            check_equal(x, rows(dtype, root, 4), f"broadcast_ {dtype} root {root}")
            base = rows(dtype, r, 5).t().contiguous()
            hvd.synchronize(hvd.broadcast_async_(base.t(), root, name=f"bcnc.{dtype}.{root}"))
            check_equal(base.t(), rows(dtype, root, 5), f"non-contiguous broadcast_ {dtype}")
            h = hvd.broadcast_async(torch.full((3,), r), root, name=f"bca.{dtype}.{root}")
            check_equal(hvd.synchronize(h), torch.full((3,), root), "broadcast_async")


def _alltoall_block(dtype, src, dst, k):
    """The k rows rank src sends to rank dst."""
    return values(dtype, src * 5 + dst, k * 2, shift=dst).reshape(k, 2)


def _send_splits(src, n):
    return [(src + 2 * dst) % 3 for dst in range(n)]


def test_alltoall_splits():
    r, n = hvd.rank(), hvd.size()
    for dtype in ALL_DTYPES:
        splits = _send_splits(r, n)
        x = torch.cat([_alltoall_block(dtype, r, d, splits[d]) for d in range(n)])
        want = torch.cat([_alltoall_block(dtype, s, r, _send_splits(s, n)[r]) for s in range(n)])
        want_recv = [_send_splits(s, n)[r] for s in range(n)]
        # list splits -> int32 received splits
        out, recv = hvd.alltoall(x, splits=splits, name=f"a2a.{dtype}")
        check_equal(out, want, f"alltoall {dtype}")
        check_equal(recv, torch.tensor(want_recv, dtype=torch.int32), f"received splits {dtype}")
        # tensor splits: received splits keep the splits' dtype
        out, recv = hvd.alltoall(x, splits=torch.tensor(splits, dtype=torch.int64),
                                 name=f"a2at.{dtype}")
        check_equal(out, want, f"alltoall tensor splits {dtype}")
        check_equal(recv, torch.tensor(want_recv, dtype=torch.int64), "int64 received splits")
        # equal split (splits=None): 2 rows to every rank; returns only the output
        eq = torch.cat([_alltoall_block(dtype, r, d, 2) for d in range(n)])
        got = hvd.alltoall(eq, name=f"a2aeq.{dtype}")
        check_equal(got, torch.cat([_alltoall_block(dtype, s, r, 2) for s in range(n)]),
                    f"alltoall equal split {dtype}")
        out, recv = hvd.synchronize(hvd.alltoall_async(eq, name=f"a2aas.{dtype}"))
        check_equal(recv, torch.full((n,), 2, dtype=torch.int32), "async received splits")
    # every rank sends nothing
    out, recv = hvd.alltoall(torch.zeros(0, 3), splits=[0] * n, name="a2a.empty")
    check_equal(out, torch.zeros(0, 3), "empty alltoall")
    # non-contiguous input
    x = torch.arange(n * 4, dtype=torch.float32).reshape(4, n).t()
    want = torch.stack([torch.arange(n * 4, dtype=torch.float32).reshape(4, n).t()[r]
                        for _ in range(n)])
    check_equal(hvd.alltoall(x, name="a2a.nc"), want, "non-contiguous alltoall")


def test_repeated_names_with_changing_splits_and_shapes():
    """The same names again and again (response cache hits) with splits and
    shapes that change every iteration (cache invalidation)."""
    r, n = hvd.rank(), hvd.size()
    for it in range(5):
        splits = [(r + d + it) % 3 for d in range(n)]
        x = torch.cat([_alltoall_block(torch.int32, r, d, splits[d]) for d in range(n)])
        out, recv = hvd.alltoall(x, splits=splits, name="loop.a2a")
        sent_to_me = [(s + r + it) % 3 for s in range(n)]
        check_equal(recv, torch.tensor(sent_to_me, dtype=torch.int32), f"iteration {it} splits")
        check_equal(out, torch.cat([_alltoall_block(torch.int32, s, r, sent_to_me[s])
                                    for s in range(n)]), f"iteration {it} alltoall")
        got = hvd.allgather(torch.full((it + r,), it), name="loop.ag")
        check_equal(got, torch.cat([torch.full((it + q,), it) for q in range(n)]),
                    f"iteration {it} allgather")
        d0 = it + 1
        outs = hvd.grouped_reducescatter([torch.ones(0, 3), torch.ones(d0, 2)], op=hvd.Sum,
                                         name="loop.grs")
        rows = d0 // n + (1 if r < d0 % n else 0)
        check_equal(outs[0], torch.zeros(0, 3), f"iteration {it} empty reducescatter")
        check_equal(outs[1], torch.full((rows, 2), float(n)), f"iteration {it} reducescatter")


def test_alltoall_errors():
    n = hvd.size()
    expect_raises(ValueError, lambda: hvd.alltoall(torch.ones(3), splits=[4] + [0] * (n - 1)),
                  "splits not summing to dim 0")
    expect_raises(ValueError, lambda: hvd.alltoall(torch.ones(3), splits=[1] * (n + 1)),
                  "one split too many")
    expect_raises(ValueError, lambda: hvd.alltoall(torch.ones(3), splits=[-1, 4] + [0] * (n - 2))
                  if n >= 2 else hvd.alltoall(torch.ones(3), splits=[-1]), "negative split")
    expect_raises(ValueError, lambda: hvd.alltoall(torch.tensor(1.0)), "scalar alltoall")
    if n > 1:
        expect_raises(ValueError, lambda: hvd.alltoall(torch.ones(n + 1)), "equal split remainder")


run([test_allgather_variable_dim0, test_grouped_allgather, test_broadcast_every_root,
     test_alltoall_splits, test_repeated_names_with_changing_splits_and_shapes,
     test_alltoall_errors])
