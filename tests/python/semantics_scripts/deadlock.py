"""deadlock.py MODE: deadlock detection (NOTE [Deadlock detection] in
csrc/common/coordinator.h). Runs with the default HOROVOD_DEADLOCK_TIMEOUT_SECONDS
unless the test sets it.

  disjoint   every rank submits a name no other rank submits: every rank gets
             HorovodInternalError within 10 s naming every rank's pending
             tensor; then a barrier against an allreduce, one name in two
             process sets (np >= 3) and async ops; after each, the job keeps
             working.
  slow_peer  false-positive guard: rank 0 is busy for 30 s (it sleeps and
             computes, never waiting in Horovod) before submitting; the other
             ranks wait in synchronize / barrier meanwhile: no error, exact
             results.
"""
import os
import sys
import time

import torch

import horovod.torch as hvd
from _sem_common import check, check_equal, done, raises

MODE = sys.argv[1]
size_env = int(os.environ.get("HOROVOD_SIZE", "1"))
ps01 = hvd.ProcessSet([0, 1])
hvd.init(process_sets=[ps01] if size_env >= 3 else None)
rank, size = hvd.rank(), hvd.size()
check(size >= 2, "deadlock.py needs at least 2 ranks")
hvd.allreduce(torch.ones(1), name="warmup")


def healthy(tag):
    check_equal(hvd.allreduce(torch.ones(3), op=hvd.Sum, name=f"healthy_{tag}"),
                torch.full((3,), float(size)), f"allreduce after {tag}")


def expect_deadlock(fn, *args, names, what, **kwargs):
    t0 = time.monotonic()
    e = raises(hvd.HorovodInternalError, fn, *args, contains=("Deadlock detected",) + tuple(names),
               what=what, **kwargs)
    waited = time.monotonic() - t0
    check(waited < 10, f"{what}: deadlock reported after {waited:.1f} s (limit 10 s)")
    return waited


if MODE == "disjoint":
    waits = []
    # 1. Disjoint names on every rank.
    names = [f"'allreduce.only_on_{r}'" for r in range(size)]
    waits.append(expect_deadlock(hvd.allreduce, torch.ones(4), name=f"only_on_{rank}",
                                 names=names + [f"rank {r}:" for r in range(size)],
                                 what="disjoint names"))
    healthy("disjoint")
    # 2. A barrier on rank 0 against an allreduce everywhere else.
    if rank == 0:
        waits.append(expect_deadlock(hvd.barrier, names=("__barrier__", "allreduce.not_on_0"),
                                     what="barrier vs allreduce"))
    else:
        waits.append(expect_deadlock(hvd.allreduce, torch.ones(2), name="not_on_0",
                                     names=("__barrier__", "allreduce.not_on_0"),
                                     what="allreduce vs barrier"))
    healthy("barrier_vs_allreduce")
    # 3. Across process sets: rank 0 submits 'x' on set [0, 1], the others
    #    on the global set; nothing is complete in either set.
    if size >= 3:
        ps = ps01 if rank == 0 else hvd.global_process_set
        waits.append(expect_deadlock(hvd.allreduce, torch.ones(2), name="x", process_set=ps,
                                     names=("allreduce.x",), what="same name, different sets"))
        healthy("cross_set")
    # 4. Async ops: each rank submits its own name and a common one, then
    #    waits for its own first; the common one still completes.
    common = hvd.allreduce_async(torch.ones(2), op=hvd.Sum, name="common")
    mine = hvd.allreduce_async(torch.ones(2), name=f"mine_{rank}")
    waits.append(expect_deadlock(hvd.synchronize, mine, names=(f"allreduce.mine_{rank}",),
                                 what="async disjoint names"))
    check_equal(hvd.synchronize(common), torch.full((2,), float(size)), "common async op")
    healthy("async")
    print(f"DEADLOCK-WAITS rank {rank}: " + " ".join(f"{w:.2f}" for w in waits), flush=True)
elif MODE == "slow_peer":
    t0 = time.monotonic()
    if rank == 0:
        x = torch.randn(64, 64)
        while time.monotonic() - t0 < 30:
            for _ in range(50):
                x = torch.tanh(x @ x)  # computing, then sleeping: never waiting in Horovod
            time.sleep(0.5)
        out = hvd.allreduce(torch.ones(5), op=hvd.Sum, name="late")
        hvd.barrier()
    elif rank == 1:
        out = hvd.allreduce(torch.ones(5), op=hvd.Sum, name="late")  # blocked ~30 s
        hvd.barrier()
    else:
        h = hvd.allreduce_async(torch.ones(5), op=hvd.Sum, name="late")
        hvd.barrier()  # blocked ~30 s in a barrier, with 'late' pending
        out = hvd.synchronize(h)
    check_equal(out, torch.full((5,), float(size)), "allreduce with a slow peer")
    check(time.monotonic() - t0 >= 29, "the slow peer was not slow")
    healthy("slow_peer")
else:
    sys.exit(f"unknown mode {MODE}")

hvd.shutdown()
done(f"deadlock {MODE}", size=size)
