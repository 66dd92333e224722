"""told_of_end.py ROUNDS: init() after a peer's shutdown() follows what this
rank was told, never how fast the news travelled (NOTE [Told of the end] in
csrc/common/generation_end.h).

Every round, all ranks start in step (an allreduce); then rank 1 waits d1 and
calls shutdown() then init(), while every other rank waits d0 and calls
init(), then an allreduce ('probe'), then init() again. The delays cycle
through d0 in {0, 0.05, 0.3, 1.0} s and d1 in {0, 0.3} s, so the other ranks'
first init() comes before, about when, and long after the shutdown's news
arrives. Whatever the delays, on every rank and every round:
- the other ranks' first init() is a no-op (their rank is unchanged, and the
  generation it keeps is rank 1's ended one);
- 'probe' raises HorovodInternalError naming rank 1's shutdown (it was
  enqueued in that generation, before or after the news);
- the second init() starts the generation rank 1 started, and an allreduce
  there gives the exact sum.
Before the rule, a first init() that came after the news started a new
generation itself, one step ahead of rank 1, and 'probe' deadlocked there.
"""
import sys
import time

import torch

import horovod.torch as hvd
from _sem_common import check, check_equal, done, raises

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 8
D0 = [0.0, 0.05, 0.3, 1.0]
D1 = [0.0, 0.3]

hvd.init()
rank, size = hvd.rank(), hvd.size()
check(size >= 2, "told_of_end.py needs at least 2 ranks")
for k in range(ROUNDS):
    d0, d1 = D0[k % len(D0)], D1[(k // len(D0)) % len(D1)]
    what = f"round {k} (d0={d0}, d1={d1})"
    hvd.init()  # in step: a no-op
    check_equal(hvd.allreduce(torch.ones(2), op=hvd.Sum, name=f"start{k}"),
                torch.full((2,), float(size)), f"{what}: allreduce at the start")
    if rank == 1:
        time.sleep(d1)
        hvd.shutdown()
        hvd.init()
    else:
        time.sleep(d0)
        hvd.init()  # not told yet: a no-op, whenever the news arrived
        check(hvd.rank() == rank and hvd.size() == size, f"{what}: init() changed the job")
        raises(hvd.HorovodInternalError, hvd.allreduce, torch.ones(1), name=f"probe{k}",
               contains=("rank 1 called hvd.shutdown()",), what=f"{what}: op after the shutdown")
        hvd.init()  # told: starts the generation rank 1 started
    check_equal(hvd.allreduce(torch.full((3,), float(rank)), op=hvd.Sum, name=f"after{k}"),
                torch.full((3,), float(sum(range(size)))), f"{what}: allreduce after init()")
hvd.shutdown()
done("told_of_end", rounds=ROUNDS)
