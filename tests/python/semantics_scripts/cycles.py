"""cycles.py CYCLES: an upstream-style test suite in one process.

Upstream's test files call hvd.init() in every test and `hvd.barrier();
hvd.shutdown()` in tearDown, some tests failing on purpose; a hundred such
cycles run in one process. This script runs CYCLES of them, rotating through
the scenarios below, with deliberate random delays (seeded per rank, so the
ranks' timings differ) around the operations whose outcome must not depend
on timing:

  ops        successful named and unnamed ops of every kind
  duplicate  rank 0 submits 'x'; after a barrier the others submit 'x' twice
             in a row: the second is a ValueError on every run, however fast
             the first completed (names stay reserved until synchronize)
  mismatch   shape and dtype mismatches fail on every rank; the job goes on
  join       rank 0 joins first; the others' allgather and broadcast fail with
             the join error; after everyone joined, unnamed allgather_object,
             broadcast_object (non-roots pass None) and unnamed allreduce work
  rejected   a rank's unnamed op is rejected at enqueue (ValueError): it
             consumes no number, so the next unnamed ops still match
  deadlock   disjoint names on every rank: every rank gets the deadlock error
             naming them (HOROVOD_DEADLOCK_TIMEOUT_SECONDS is set small); the
             generation has ended, so the next op fails and the tearDown
             barrier raises, and the next init() starts a new generation
  peer_shutdown  rank 0 shuts down while the others wait on an op: they get
             the shutdown error naming rank 0, their tearDown barrier fails
             (so they never call shutdown) and the next init() still starts
             a new generation with rank 0

Every rank records per cycle the scenario and an outcome string; at the end
the outcomes are allgathered and must be identical on every rank (and every
cycle must have passed)."""
import os
import random
import sys
import time

import torch

import horovod.torch as hvd
from _sem_common import check, check_equal, done, raises

CYCLES = int(sys.argv[1]) if len(sys.argv) > 1 else 60
RANK = int(os.environ.get("HOROVOD_RANK", "0"))
jitter = random.Random(1000 + RANK)


def pause():
    """A random delay of 0-4 ms (different on every rank)."""
    time.sleep(jitter.choice([0, 0, 0.0005, 0.002, 0.004]))


def scenario_ops(rank, size, c):
    x = hvd.allreduce(torch.full((7,), float(rank + c)), op=hvd.Sum, name="ops_x")
    check_equal(x, torch.full((7,), float(sum(r + c for r in range(size)))), "allreduce")
    pause()
    for i in range(3):  # unnamed
        y = hvd.allreduce(torch.arange(5) * (rank + i), op=hvd.Sum)
        check_equal(y, torch.arange(5) * sum(r + i for r in range(size)), "unnamed allreduce")
    g = hvd.allgather(torch.full((rank + 1,), rank))
    check_equal(g, torch.cat([torch.full((r + 1,), r) for r in range(size)]), "allgather")
    b = hvd.broadcast(torch.full((3,), float(rank)), root_rank=size - 1)
    check_equal(b, torch.full((3,), float(size - 1)), "broadcast")
    a = hvd.alltoall(torch.full((size, 2), rank), name="ops_a2a")
    check_equal(a, torch.arange(size).repeat_interleave(2).reshape(size, 2), "alltoall")
    rs = hvd.reducescatter(torch.ones(size * 2), op=hvd.Sum)
    check_equal(rs, torch.full((2,), float(size)), "reducescatter")
    check_equal(hvd.allreduce(torch.zeros(0), name="ops_empty"), torch.zeros(0), "empty allreduce")
    return "ok"


def scenario_duplicate(rank, size, c):
    t = torch.ones(4)
    if rank == 0:
        h = hvd.allreduce_async(t, op=hvd.Sum, name="x")
        hvd.barrier()
        pause()
    else:
        hvd.barrier()
        h = hvd.allreduce_async(t, op=hvd.Sum, name="x")
        pause()  # the first 'x' may well complete meanwhile: must not matter
        raises(ValueError, hvd.allreduce_async, t, op=hvd.Sum, name="x", contains=("x",),
               what="second 'x' before the first was synchronized")
    check_equal(hvd.synchronize(h), torch.full((4,), float(size)), "'x'")
    # Synchronized: the name is free again on every rank.
    check_equal(hvd.allreduce(t, op=hvd.Sum, name="x"), torch.full((4,), float(size)), "'x' again")
    return "ok"


def scenario_mismatch(rank, size, c):
    shape = (3, 4) if rank == 0 else (3, 5)
    raises(hvd.HorovodInternalError, hvd.allreduce, torch.ones(shape), name="bad_shape",
           contains=("allreduce.bad_shape", "rank 0", "rank 1"), what="shape mismatch")
    pause()
    dtype = torch.float32 if rank != size - 1 else torch.int32
    raises(hvd.HorovodInternalError, hvd.allgather, torch.ones(2, dtype=dtype), name="bad_dtype",
           contains=("allgather.bad_dtype", f"rank {size - 1}"), what="dtype mismatch")
    check_equal(hvd.allreduce(torch.ones(2), op=hvd.Sum, name="after_mismatch"),
                torch.full((2,), float(size)), "allreduce after the mismatches")
    return "ok"


def scenario_join(rank, size, c):
    if rank == 0:
        pause()
        last = hvd.join()
    else:
        # An allreduce can only complete once rank 0 has joined, which makes
        # the errors below deterministic.
        check_equal(hvd.allreduce(torch.ones(2), op=hvd.Sum, name="j_ar"),
                    torch.full((2,), float(size - 1)), "allreduce with rank 0 joined")
        raises(hvd.HorovodInternalError, hvd.allgather, torch.ones(2),
               contains=("join",), what="unnamed allgather with rank 0 joined")
        raises(hvd.HorovodInternalError, hvd.broadcast, torch.ones(2), root_rank=1,
               contains=("join",), what="unnamed broadcast with rank 0 joined")
        raises(hvd.HorovodInternalError, hvd.allgather_object, {"rank": rank},
               contains=("join",), what="allgather_object with rank 0 joined")
        pause()
        last = hvd.join()
    check(0 < last < size, f"join() returned {last}")
    # Rank 0 skipped the unnamed ops and object ops above; every name below
    # still agrees.
    objs = hvd.allgather_object({"rank": rank, "c": c})
    check_equal(objs, [{"rank": r, "c": c} for r in range(size)], "allgather_object after join")
    got = hvd.broadcast_object({"from": 1, "c": c} if rank == 1 else None, root_rank=1)
    check_equal(got, {"from": 1, "c": c}, "broadcast_object, non-roots passing None")
    y = hvd.allgather(torch.tensor([rank]))
    check_equal(y, torch.arange(size), "unnamed allgather after join")
    z = hvd.broadcast(torch.full((2,), float(rank)), root_rank=0)
    check_equal(z, torch.zeros(2), "unnamed broadcast after join")
    return f"ok last={last}"


def scenario_rejected(rank, size, c):
    if rank == size - 1:
        # Rejected at enqueue (splits do not sum to dim 0): consumes no number.
        raises(ValueError, hvd.alltoall, torch.ones(size), splits=[size + 1] + [0] * (size - 1),
               what="alltoall with bad splits")
        raises(ValueError, hvd.allreduce, torch.ones(2), op=99, what="allreduce with a bad op")
    pause()
    y = hvd.alltoall(torch.full((size,), rank))
    check_equal(y, torch.arange(size), "unnamed alltoall after a one-sided rejection")
    z = hvd.allreduce(torch.ones(3), op=hvd.Sum)
    check_equal(z, torch.full((3,), float(size)), "unnamed allreduce after a one-sided rejection")
    return "ok"


def scenario_deadlock(rank, size, c):
    t0 = time.monotonic()
    e = raises(hvd.HorovodInternalError, hvd.allreduce, torch.ones(2), name=f"only_{rank}",
               contains=("Deadlock", "allreduce.only_0", f"allreduce.only_{size - 1}"),
               what="disjoint names")
    waited = time.monotonic() - t0
    check(waited < 10, f"deadlock reported after {waited:.1f} s: {e}")
    raises(hvd.HorovodInternalError, hvd.allreduce, torch.ones(2), name="after_deadlock",
           contains=("ended after a detected deadlock", "hvd.init()"),
           what="allreduce after the deadlock error")
    return "ended"


def scenario_peer_shutdown(rank, size, c):
    hvd.allreduce(torch.ones(1), name="ps_warm")
    if rank == 0:
        hvd.barrier()  # every other rank has enqueued 'never' before this returns
        pause()
        hvd.shutdown()
        return "shut down"
    h = hvd.allreduce_async(torch.ones(1), name="never")
    hvd.barrier()
    raises(hvd.HorovodInternalError, hvd.synchronize, h, contains=("shut down", "rank 0"),
           what="pending op when rank 0 shut down")
    return "shut down"


SCENARIOS = [scenario_ops, scenario_duplicate, scenario_mismatch, scenario_join,
             scenario_rejected, scenario_ops, scenario_deadlock, scenario_peer_shutdown]


def tear_down():
    """Upstream's tearDown: if the barrier raises, shutdown() is never called."""
    try:
        hvd.barrier()
        hvd.shutdown()
        return "clean"
    except (hvd.HorovodInternalError, ValueError) as e:
        return f"barrier raised {type(e).__name__}"


outcomes = []
for cycle in range(CYCLES):
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    check(size >= 2, "cycles.py needs at least 2 ranks")
    scenario = SCENARIOS[cycle % len(SCENARIOS)]
    result = scenario(rank, size, cycle)
    # After a peer's shutdown or a deadlock the tearDown barrier fails on
    # every rank (rank 0 is not initialized any more: ValueError; an ended
    # generation: HorovodInternalError); normalize to "failed".
    td = tear_down()
    outcomes.append((cycle, scenario.__name__, result, "clean" if td == "clean" else "failed"))

hvd.init()
every = hvd.allgather_object(outcomes)
for r, theirs in enumerate(every):
    check(theirs == outcomes, f"rank {r} ended the cycles differently: {theirs} vs {outcomes}")
failed_teardowns = sum(1 for o in outcomes if o[3] != "clean")
ending = ("scenario_deadlock", "scenario_peer_shutdown")  # they end their generation
check(failed_teardowns == sum(1 for o in outcomes if o[1] in ending) and
      all(o[3] != "clean" for o in outcomes if o[1] in ending),
      f"unexpected tearDown failures: {outcomes}")
hvd.shutdown()
done("cycles", cycles=CYCLES)
