"""basics.py: init / shutdown / re-init, topology from the environment,
ValueError before init, start_timeline without HOROVOD_TIMELINE.

Works as a launched job (any np) and as a plain `python basics.py`
(a size-1 job: no HOROVOD_* variables)."""
import os
import random
import time

import torch

import horovod.torch as hvd
from _sem_common import check, check_equal, done, raises

ENV = {k: int(os.environ.get(f"HOROVOD_{k.upper()}", d))
       for k, d in [("rank", 0), ("size", 1), ("local_rank", 0), ("local_size", 1),
                    ("cross_rank", 0), ("cross_size", 1)]}
TOPOLOGY = ["rank", "size", "local_rank", "local_size", "cross_rank", "cross_size"]


def check_not_initialized(when):
    check(hvd.is_initialized() is False, f"is_initialized() {when} should be False")
    for fn in TOPOLOGY:
        raises(ValueError, getattr(hvd, fn), what=f"hvd.{fn}() {when}")
    raises(ValueError, hvd.start_timeline, "/tmp/never_written.json",
           what=f"start_timeline {when}")
    raises(ValueError, hvd.stop_timeline, what=f"stop_timeline {when}")


def check_topology():
    check(hvd.is_initialized() is True, "is_initialized() after init should be True")
    for fn in TOPOLOGY:
        check_equal(getattr(hvd, fn)(), ENV[fn], f"hvd.{fn}() vs HOROVOD_{fn.upper()}")


def check_collectives(generation):
    rank, size = hvd.rank(), hvd.size()
    # Same names as in the previous generation: names are per job generation.
    x = torch.full((5,), float(rank + 1 + generation))
    expected_sum = float(sum(r + 1 + generation for r in range(size)))
    check_equal(hvd.allreduce(x, name="basics_x", op=hvd.Sum), torch.full((5,), expected_sum),
                f"gen {generation} named Sum allreduce")
    check_equal(x, torch.full((5,), float(rank + 1 + generation)), "allreduce input untouched")
    # Unnamed ops (auto names restart each generation and agree across ranks).
    for i in range(3):
        y = torch.arange(4, dtype=torch.int64) * (rank + i)
        check_equal(hvd.allreduce(y, op=hvd.Sum),
                    torch.arange(4, dtype=torch.int64) * sum(r + i for r in range(size)),
                    f"gen {generation} unnamed allreduce {i}")
    g = hvd.allgather(torch.full((rank + 1, 2), rank, dtype=torch.int32))
    check_equal(g, torch.cat([torch.full((r + 1, 2), r, dtype=torch.int32) for r in range(size)]),
                f"gen {generation} allgather")
    b = hvd.broadcast(torch.full((3,), float(rank)), root_rank=size - 1, name="basics_b")
    check_equal(b, torch.full((3,), float(size - 1)), f"gen {generation} broadcast")
    hvd.barrier()
    last = hvd.join()  # everyone joins at once: any rank may be last, but all must agree
    check(isinstance(last, int) and 0 <= last < size, f"join() returned {last!r}")
    seen = hvd.allgather(torch.tensor([last], dtype=torch.int64), name="basics_join_result")
    check_equal(seen, torch.full((size,), last, dtype=torch.int64), "join() result on every rank")


check_not_initialized("before init")
hvd.init()
check_topology()
hvd.init()  # idempotent while initialized
check_topology()
check_collectives(0)
# HOROVOD_TIMELINE unset at init -> start_timeline is a ValueError that says what to set.
check("HOROVOD_TIMELINE" not in os.environ, "test must run without HOROVOD_TIMELINE")
raises(ValueError, hvd.start_timeline, "/tmp/never_written.json", contains=("HOROVOD_TIMELINE",),
       what="start_timeline without HOROVOD_TIMELINE")

for generation in (1, 2):
    hvd.shutdown()
    check_not_initialized(f"after shutdown {generation}")
    hvd.shutdown()  # safe to repeat
    hvd.init()
    check_topology()
    check_collectives(generation)

# init -> shutdown -> init (upstream's test_horovod_reinit, then its tearDown's
# barrier + shutdown) with each rank pausing at different points: a peer's
# shutdown of an earlier generation must never fail a later one, whichever
# rank gets where first.
delays = random.Random(7 + ENV["rank"])
for generation in range(3, 15):
    hvd.shutdown()
    time.sleep(delays.choice((0, 0, 0.002, 0.02, 0.1)))
    hvd.init()
    time.sleep(delays.choice((0, 0, 0.002, 0.02, 0.1)))
    check_topology()
    check_collectives(generation)
    hvd.barrier()

hvd.shutdown()
check(not hvd.is_initialized(), "final shutdown")
done("basics", size=ENV["size"])
