"""deadlock.py MODE: deadlock detection (NOTE [Deadlock detection] in
csrc/common/coordinator.h). Runs with the default HOROVOD_DEADLOCK_TIMEOUT_SECONDS
unless the test sets it.

  disjoint   every rank submits a name no other rank submits: every rank gets
             HorovodInternalError within 10 s naming every rank's pending
             tensor; then a barrier against an allreduce, one name in two
             process sets (np >= 3), a deadlock inside process sets only
             (np >= 3: the global set has nothing pending) and async ops.
             After each, the generation has ended (NOTE [A deadlock ends the
             generation] in csrc/common/coordinator.h): the next op fails
             at once, on every rank, and hvd.init() starts a new generation
             in which every rank is in step again.
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
ps12 = hvd.ProcessSet([1, 2])
SETS = [ps01, ps12] if size_env >= 3 else None
hvd.init(process_sets=SETS)
rank, size = hvd.rank(), hvd.size()
check(size >= 2, "deadlock.py needs at least 2 ranks")
hvd.allreduce(torch.ones(1), name="warmup")


def healthy(tag):
    check_equal(hvd.allreduce(torch.ones(3), op=hvd.Sum, name=f"healthy_{tag}"),
                torch.full((3,), float(size)), f"allreduce after {tag}")


def realign(tag):
    """The generation a deadlock ended fails every op at once; init()
    starts the next one, where the ranks are in step."""
    raises(hvd.HorovodInternalError, hvd.allreduce, torch.ones(3), name=f"late_{tag}",
           contains=("ended after a detected deadlock", "hvd.init()"),
           what=f"allreduce after {tag}")
    hvd.init(process_sets=SETS)
    for ps in SETS or []:
        if rank in ps.ranks:
            check_equal(hvd.allreduce(torch.ones(1), op=hvd.Sum, name=f"set_{tag}",
                                      process_set=ps),
                        torch.full((1,), 2.0), f"allreduce on {ps.ranks} after {tag} and init()")
    healthy(tag)  # last: no rank leaves (and shuts down) while a set op still runs


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
    realign("disjoint")
    # 2. A barrier on rank 0 against an allreduce everywhere else.
    if rank == 0:
        waits.append(expect_deadlock(hvd.barrier, names=("__barrier__", "allreduce.not_on_0"),
                                     what="barrier vs allreduce"))
    else:
        waits.append(expect_deadlock(hvd.allreduce, torch.ones(2), name="not_on_0",
                                     names=("__barrier__", "allreduce.not_on_0"),
                                     what="allreduce vs barrier"))
    realign("barrier_vs_allreduce")
    # 3. Across process sets: rank 0 submits 'x' on set [0, 1], the others
    #    on the global set; nothing is complete in either set.
    if size >= 3:
        ps = ps01 if rank == 0 else hvd.global_process_set
        waits.append(expect_deadlock(hvd.allreduce, torch.ones(2), name="x", process_set=ps,
                                     names=("allreduce.x",), what="same name, different sets"))
        realign("cross_set")
        # 4. Inside process sets only: ranks 0 and 1 submit different names
        #    on [0, 1], rank 2 a name on [1, 2] that rank 1 never submits;
        #    the global set has nothing pending, so the sets' coordinators
        #    declare it and the global set's next cycle ends the generation.
        if rank < 2:
            waits.append(expect_deadlock(hvd.allreduce, torch.ones(2), name=f"in01_{rank}",
                                         process_set=ps01, names=("allreduce.in01_",),
                                         what="deadlock in set [0, 1]"))
        else:
            waits.append(expect_deadlock(hvd.allreduce, torch.ones(2), name="in12",
                                         process_set=ps12, names=("allreduce.in12",),
                                         what="deadlock in set [1, 2]"))
        realign("sets_only")
    # 5. Async ops: each rank submits its own name and a common one, then
    #    waits for its own first; the common one completed before.
    common = hvd.allreduce_async(torch.ones(2), op=hvd.Sum, name="common")
    mine = hvd.allreduce_async(torch.ones(2), name=f"mine_{rank}")
    waits.append(expect_deadlock(hvd.synchronize, mine, names=(f"allreduce.mine_{rank}",),
                                 what="async disjoint names"))
    check_equal(hvd.synchronize(common), torch.full((2,), float(size)), "common async op")
    realign("async")
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
