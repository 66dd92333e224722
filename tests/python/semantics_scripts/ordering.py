"""ordering.py: negotiation by name.

- a name already in flight on this rank -> ValueError at enqueue; the name
  is free again once the op completed; the same user name for different op
  types does not collide;
- unnamed ops get names that agree across ranks;
- ranks submitting ops in different orders (reversed on odd ranks) all
  complete correctly;
- 100 small async allreduces (mixed dtypes/ops/scales) then synchronize
  (fusion) give exact results, three times (later rounds hit the cache);
- barrier completes while a named op is pending on some rank.

All data is integer-valued so results are exact whatever the reduction
order; prints 'DIGEST <sha256>' of every result so runs with fusion/cache
disabled can be compared with the default run."""
import hashlib

import torch

import horovod.torch as hvd
from _sem_common import check, check_equal, done, raises

hvd.init()
rank, size = hvd.rank(), hvd.size()
ranks = range(size)
digest = hashlib.sha256()


def record(t):
    t = t.contiguous()
    digest.update(str((t.dtype, tuple(t.shape))).encode())
    digest.update(t.numpy().tobytes())
    return t


# ---------------------------------------------------------------- duplicate names
# Rank 0 holds 'dup' in flight until everyone passed the checks (the others
# only submit it after the barrier), so the ValueError is deterministic.
if rank == 0:
    h = hvd.allreduce_async(torch.ones(3), op=hvd.Sum, name="dup")
    raises(ValueError, hvd.allreduce_async, torch.ones(3), name="dup", contains=("dup",),
           what="duplicate in-flight allreduce name")
    raises(ValueError, hvd.allreduce_async_, torch.ones(3), name="dup",
           what="duplicate in-flight name, in-place variant")
    check(not hvd.poll(h), "poll() True although the other ranks have not submitted 'dup'")
    hvd.barrier()
else:
    hvd.barrier()
    h = hvd.allreduce_async(torch.ones(3), op=hvd.Sum, name="dup")
check_equal(record(hvd.synchronize(h)), torch.full((3,), float(size)), "first 'dup'")
# Completed -> the name can be used again.
check_equal(record(hvd.allreduce(torch.ones(3), op=hvd.Sum, name="dup")),
            torch.full((3,), float(size)), "'dup' re-used after completion")
# Same user name for different op types: different core names, no collision.
ha = hvd.allreduce_async(torch.ones(2), op=hvd.Sum, name="shared")
hg = hvd.allgather_async(torch.full((1,), rank), name="shared")
hb = hvd.broadcast_async(torch.full((2,), float(rank)), root_rank=0, name="shared")
check_equal(record(hvd.synchronize(hb)), torch.zeros(2), "broadcast 'shared'")
check_equal(record(hvd.synchronize(hg)), torch.arange(size), "allgather 'shared'")
check_equal(record(hvd.synchronize(ha)), torch.full((2,), float(size)), "allreduce 'shared'")
# Grouped: duplicate group name in flight.
if rank == 0:
    hgrp = hvd.grouped_allreduce_async([torch.ones(1), torch.ones(2)], op=hvd.Sum, name="gdup")
    raises(ValueError, hvd.grouped_allreduce_async, [torch.ones(1), torch.ones(2)], name="gdup",
           what="duplicate in-flight grouped name")
    hvd.barrier()
else:
    hvd.barrier()
    hgrp = hvd.grouped_allreduce_async([torch.ones(1), torch.ones(2)], op=hvd.Sum, name="gdup")
for t, n in zip(hvd.synchronize(hgrp), (1, 2)):
    check_equal(record(t), torch.full((n,), float(size)), "grouped 'gdup'")

# ---------------------------------------------------------------- unnamed ops
# Async unnamed ops of one type, interleaved with named ones.
hs = []
for i in range(10):
    hs.append(hvd.allreduce_async(torch.full((i + 1,), float(rank * i)), op=hvd.Sum))
    if i % 3 == 0:
        hs.append(hvd.allreduce_async(torch.full((2,), float(i)), op=hvd.Sum, name=f"named{i}"))
res = [hvd.synchronize(h) for h in hs]
k = 0
for i in range(10):
    check_equal(record(res[k]), torch.full((i + 1,), float(sum(r * i for r in ranks))),
                f"unnamed allreduce {i}")
    k += 1
    if i % 3 == 0:
        check_equal(record(res[k]), torch.full((2,), float(i * size)), f"named{i}")
        k += 1
# Unnamed ops of different types interleaved differently on odd ranks.
ops = [lambda: hvd.allreduce_async(torch.full((4,), float(rank)), op=hvd.Sum),
       lambda: hvd.allgather_async(torch.full((2,), rank, dtype=torch.int16)),
       lambda: hvd.broadcast_async(torch.full((3,), rank, dtype=torch.int64), root_rank=size - 1)]
order = [0, 1, 2] if rank % 2 == 0 else [2, 1, 0]
handles = {i: ops[i]() for i in order}
check_equal(record(hvd.synchronize(handles[0])), torch.full((4,), float(sum(ranks))),
            "unnamed allreduce among other unnamed ops")
check_equal(record(hvd.synchronize(handles[1])),
            torch.arange(size, dtype=torch.int16).repeat_interleave(2), "unnamed allgather")
check_equal(record(hvd.synchronize(handles[2])), torch.full((3,), size - 1, dtype=torch.int64),
            "unnamed broadcast")

# ---------------------------------------------------------------- different orders
specs = []
for i in range(24):
    dtype = [torch.float32, torch.float64, torch.int32, torch.int64, torch.float16][i % 5]
    specs.append((f"order{i}", dtype, 1 + (i * 37) % 300, i % 3))  # kind: 0 allreduce 1 allgather 2 bcast
submit_order = list(range(len(specs)))
if rank % 2 == 1:
    submit_order.reverse()
pending = {}
for i in submit_order:
    name, dtype, n, kind = specs[i]
    if kind == 0:
        pending[i] = hvd.allreduce_async(torch.full((n,), rank + i, dtype=dtype), op=hvd.Sum, name=name)
    elif kind == 1:
        pending[i] = hvd.allgather_async(torch.full((rank + 1, n), i, dtype=dtype), name=name)
    else:
        pending[i] = hvd.broadcast_async(torch.full((n,), rank * 10 + i, dtype=dtype),
                                         root_rank=i % size, name=name)
for i in sorted(pending):  # synchronize in yet another order
    name, dtype, n, kind = specs[i]
    out = record(hvd.synchronize(pending[i]))
    if kind == 0:
        exp = torch.full((n,), sum(r + i for r in ranks), dtype=dtype)
    elif kind == 1:
        exp = torch.full((sum(r + 1 for r in ranks), n), i, dtype=dtype)
    else:
        exp = torch.full((n,), (i % size) * 10 + i, dtype=dtype)
    check_equal(out, exp, f"{name} submitted in {'reversed' if rank % 2 else 'forward'} order")

# ---------------------------------------------------------------- fusion
def fusion_round(rnd):
    hs = []
    exps = []
    for i in range(100):
        dtype = [torch.float32, torch.float64, torch.int32, torch.int64][i % 4]
        n = 1 + (i * 13) % 64
        op = [hvd.Sum, hvd.Min, hvd.Max, hvd.Sum, hvd.Product][i % 5]
        vals = [torch.arange(n, dtype=torch.int64) % 5 + r + i % 3 for r in ranks]
        if op == hvd.Sum:
            exp = sum(vals)
        elif op == hvd.Min:
            exp = torch.stack(vals).min(0).values
        elif op == hvd.Max:
            exp = torch.stack(vals).max(0).values
        else:
            exp = torch.stack(vals).prod(0)
        pre = post = 1.0
        if i % 10 == 3:  # a few scaled Sums (exact: powers of two); not fusible with the rest
            assert op == hvd.Sum
            if dtype.is_floating_point:
                pre, post = 2.0, 0.25
                exp = exp.double() * 0.5  # sum * 2 * 0.25 (halves are exact)
            else:
                pre, post = 3.0, 1.0  # ints are scaled in double and truncated: exact here
                exp = exp * 3
        hs.append(hvd.allreduce_async(vals[rank].to(dtype), op=op, name=f"fuse{i}",
                                      prescale_factor=pre, postscale_factor=post))
        exps.append(exp.to(dtype))
    # Average over an integer-valued float tensor that divides evenly.
    hs.append(hvd.allreduce_async(torch.full((17,), float(size * (rank + 1))), op=hvd.Average,
                                  name="fuse_avg"))
    exps.append(torch.full((17,), float(sum(size * (r + 1) for r in ranks)) / size))
    hg = hvd.grouped_allreduce_async([torch.full((i + 1,), float(rank + i)) for i in range(10)],
                                     op=hvd.Sum, name="fuse_group")
    for i, (h, exp) in enumerate(zip(hs, exps)):
        check_equal(record(hvd.synchronize(h)), exp, f"fusion round {rnd} tensor {i}")
    for i, t in enumerate(hvd.synchronize(hg)):
        check_equal(record(t), torch.full((i + 1,), float(sum(r + i for r in ranks))),
                    f"fusion round {rnd} group member {i}")


for rnd in range(3):
    fusion_round(rnd)

# ---------------------------------------------------------------- barrier with a pending op
if rank == 0:
    hx = hvd.allreduce_async(torch.full((4,), 1.0), op=hvd.Sum, name="x_pending")
    check(not hvd.poll(hx), "poll() True before the other ranks submitted 'x_pending'")
    hvd.barrier()
else:
    hvd.barrier()
    hx = hvd.allreduce_async(torch.full((4,), 1.0), op=hvd.Sum, name="x_pending")
check_equal(record(hvd.synchronize(hx)), torch.full((4,), float(size)), "op pending across a barrier")
# Twice more, so the second time 'x_pending' is a cache hit on the ranks.
for i in range(2):
    if rank == size - 1:
        hx = hvd.allreduce_async(torch.full((4,), 2.0), op=hvd.Sum, name="x_pending")
        hvd.barrier()
        hvd.barrier()
    else:
        hvd.barrier()
        hx = hvd.allreduce_async(torch.full((4,), 2.0), op=hvd.Sum, name="x_pending")
        hvd.barrier()
    check_equal(record(hvd.synchronize(hx)), torch.full((4,), 2.0 * size),
                f"cached op pending across barriers ({i})")

hvd.shutdown()
print(f"DIGEST {digest.hexdigest()}", flush=True)
done("ordering", size=size)
