"""join.py: hvd.join() semantics.

Round A: ranks join in descending order (rank r runs 2*(size-r) steps of
allreduce, then joins): joined ranks contribute zeros (Sum and Average =
sum of the active ranks' values / size), and join() returns the last rank
to join (rank 0) on every rank. Round B: ascending order (last = size-1),
with the same tensor names (cache entries from round A). Round C: with
ranks 1.. joined, allgather / broadcast / alltoall / reducescatter on rank 0
fail with HorovodInternalError while (grouped, fp16) allreduces work; join
still completes. Round D: a rank joins while the others have 40 async
allreduces in flight. After each round a normal allreduce over all ranks
works. Needs np >= 2; run with and without HOROVOD_CACHE_CAPACITY=0."""
import torch

import horovod.torch as hvd
from _sem_common import check, check_equal, done, raises

hvd.init()
rank, size = hvd.rank(), hvd.size()
check(size >= 2, "join.py needs at least 2 ranks")


def full_allreduce(tag):
    out = hvd.allreduce(torch.full((5,), float(rank + 1)), op=hvd.Sum, name="join_all")
    check_equal(out, torch.full((5,), float(sum(r + 1 for r in range(size)))),
                f"allreduce over all ranks after {tag}")


def run_round(tag, steps_of):
    """Rank r runs steps_of(r) allreduce steps, then joins."""
    my_steps = steps_of(rank)
    for s in range(my_steps):
        active = [r for r in range(size) if steps_of(r) > s]
        value = float(rank + 1)
        # Same names in every round: in round B they are cache entries.
        if s % 2 == 0:
            out = hvd.allreduce(torch.full((3, 2), value), op=hvd.Sum, name=f"step{s}")
            exp = float(sum(r + 1 for r in active))
        else:
            out = hvd.allreduce(torch.full((3, 2), value * size), op=hvd.Average, name=f"step{s}")
            exp = float(sum((r + 1) * size for r in active)) / size
        check_equal(out, torch.full((3, 2), exp),
                    f"{tag} step {s} with active ranks {active} (others joined)")
        if s % 2 == 1:
            # Large enough for the shm backend's sliced algorithm, where a
            # joined rank (which packs zeros) reduces and scales a slice
            # that the active ranks receive: the Average must be applied
            # once there too.
            big = hvd.allreduce(torch.full((6000,), value * size, dtype=torch.float64),
                                op=hvd.Average, name=f"big{s}")
            check_equal(big, torch.full((6000,), exp, dtype=torch.float64),
                        f"{tag} large Average step {s} with active ranks {active}")
        # An integer allreduce as well (zeros from joined ranks, not garbage).
        iout = hvd.allreduce(torch.full((4,), rank + 1, dtype=torch.int64), op=hvd.Sum,
                             name=f"istep{s}")
        check_equal(iout, torch.full((4,), sum(r + 1 for r in active), dtype=torch.int64),
                    f"{tag} int step {s}")
    return hvd.join()


full_allreduce("start")
last = run_round("round A (descending)", lambda r: 2 * (size - r))
check_equal(last, 0, "join() result in round A (rank 0 joins last)")
full_allreduce("round A")

last = run_round("round B (ascending)", lambda r: 2 * (r + 1))
check_equal(last, size - 1, "join() result in round B (last rank joins last)")
full_allreduce("round B")

# Round C: ranks 1.. join at once; rank 0 tries ops that need every rank.
if rank == 0:
    # A completed allreduce proves every other rank has joined (it can only
    # finish once they joined), so the errors below are deterministic.
    solo = hvd.allreduce(torch.full((2,), 5.0), op=hvd.Sum, name="solo")
    check_equal(solo, torch.full((2,), 5.0), "allreduce with every other rank joined")
    raises(hvd.HorovodInternalError, hvd.allgather, torch.ones(2, 2), name="ag_joined",
           contains=("allgather.ag_joined", "join"), what="allgather with joined ranks")
    raises(hvd.HorovodInternalError, hvd.broadcast, torch.ones(2), root_rank=0, name="bc_joined",
           contains=("broadcast.bc_joined", "join"), what="broadcast with joined ranks")
    raises(hvd.HorovodInternalError, hvd.alltoall, torch.ones(size, 2), name="a2a_joined",
           contains=("alltoall.a2a_joined", "join"), what="alltoall with joined ranks")
    raises(hvd.HorovodInternalError, hvd.reducescatter, torch.ones(size * 2), op=hvd.Sum,
           name="rs_joined", contains=("reducescatter.rs_joined", "join"),
           what="reducescatter with joined ranks")
    # Grouped and fp16 allreduces accept joined ranks too.
    outs = hvd.grouped_allreduce([torch.ones(2), torch.full((3,), 2.0)], op=hvd.Sum, name="grp_joined")
    check_equal(outs[0], torch.ones(2), "grouped allreduce with joined ranks [0]")
    check_equal(outs[1], torch.full((3,), 2.0), "grouped allreduce with joined ranks [1]")
    check_equal(hvd.allreduce(torch.ones(3, dtype=torch.float16), op=hvd.Sum, name="half_joined"),
                torch.ones(3, dtype=torch.float16), "fp16 allreduce with joined ranks")
    # Allreduce still fine after those errors.
    check_equal(hvd.allreduce(torch.full((2,), 5.0), op=hvd.Sum, name="solo"),
                torch.full((2,), 5.0), "allreduce after the join errors")
last = hvd.join()
check_equal(last, 0, "join() result in round C")
full_allreduce("round C")

# Round D: a rank joins while the others have many async allreduces in
# flight (fused together).
if rank == size - 1:
    last = hvd.join()
else:
    hs = [hvd.allreduce_async(torch.full((i + 1,), float(rank + i)), op=hvd.Sum, name=f"many{i}")
          for i in range(40)]
    for i, h in enumerate(hs):
        check_equal(hvd.synchronize(h), torch.full((i + 1,), float(sum(r + i for r in range(size - 1)))),
                    f"round D async allreduce {i}")
    last = hvd.join()
check(0 <= last < size - 1, f"round D: join() returned {last}, expected one of the non-early ranks")
seen = hvd.allgather(torch.tensor([last]), name="join_seen")
check_equal(seen, torch.full((size,), last, dtype=torch.int64), "round D join() result on every rank")
full_allreduce("round D")

hvd.shutdown()
done("join", size=size)
