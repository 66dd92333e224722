"""process_sets.py MODE — process sets at np 3.

static:  init(process_sets=[ProcessSet([0, 1]), ProcessSet([1, 2])]); ops on
         each set (set-relative Average, allgather, broadcast with a global
         root, barrier), concurrent ops on overlapping sets, ProcessSet
         size()/rank()/included(), ValueError for a set the rank is not in,
         duplicate sets at init -> ValueError, add_process_set without
         dynamic mode -> ValueError, remove id 0 -> False.
dynamic: HOROVOD_DYNAMIC_PROCESS_SETS=1 (set by the test) + init(), then
         shutdown and init(process_sets="dynamic"); add_process_set /
         remove_process_set collectively, duplicates -> ValueError,
         removing id 0 -> False.
dynamic_remove: init(process_sets="dynamic"); remove_process_set of added
         sets (True, object invalidated, ops on it -> ValueError, second
         removal False), re-adding, other sets keep working."""
import os
import sys
import time

import torch

import horovod.torch as hvd
from horovod_accel.common.basics import HorovodBasics  # internals (§1.1 _get_process_set_ids_and_ranks)
from _sem_common import check, check_equal, done, raises

mode = sys.argv[1]


def registered():
    """{process_set_id: ranks} of every set the core has registered."""
    return HorovodBasics()._get_process_set_ids_and_ranks()


def exercise_set(ps, tag):
    """Collective checks on a registered set; non-members check ValueError."""
    rank = hvd.rank()
    members = ps.ranks
    check(ps.process_set_id is not None and ps.process_set_id != 0, f"{tag}: id {ps.process_set_id}")
    check_equal(ps.size(), len(members), f"{tag}: size()")
    check_equal(ps.included(), rank in members, f"{tag}: included()")
    check_equal(registered().get(ps.process_set_id), members, f"{tag}: registered ranks")
    if rank not in members:
        raises(ValueError, ps.rank, what=f"{tag}: rank() on a non-member")
        raises(ValueError, hvd.allreduce, torch.ones(2), name="ps_op", process_set=ps,
               what=f"{tag}: allreduce on a set this rank is not in")
        raises(ValueError, hvd.allgather_async, torch.ones(2), process_set=ps,
               what=f"{tag}: allgather on a set this rank is not in")
        raises(ValueError, hvd.broadcast, torch.ones(2), root_rank=members[0], process_set=ps,
               what=f"{tag}: broadcast on a set this rank is not in")
        raises(ValueError, hvd.barrier, process_set=ps, what=f"{tag}: barrier on a foreign set")
        return
    check_equal(ps.rank(), members.index(rank), f"{tag}: rank()")
    v = float(rank + 1)
    check_equal(hvd.allreduce(torch.full((3,), v), op=hvd.Sum, name="ps_op", process_set=ps),
                torch.full((3,), float(sum(r + 1 for r in members))), f"{tag}: Sum")
    check_equal(hvd.allreduce(torch.full((3,), v * len(members)), name="ps_avg", process_set=ps),
                torch.full((3,), float(sum(r + 1 for r in members))), f"{tag}: Average over set size")
    check_equal(hvd.allgather(torch.full((rank + 1,), rank), process_set=ps),
                torch.cat([torch.full((r + 1,), r) for r in members]), f"{tag}: allgather")
    root = members[-1]  # a *global* rank
    check_equal(hvd.broadcast(torch.full((2,), v), root_rank=root, name="ps_b", process_set=ps),
                torch.full((2,), float(root + 1)), f"{tag}: broadcast from global root {root}")
    hvd.barrier(process_set=ps)
    # Unnamed ops on the set agree on names.
    hs = [hvd.allreduce_async(torch.full((i + 1,), v), op=hvd.Sum, process_set=ps) for i in range(5)]
    for i, h in enumerate(hs):
        check_equal(hvd.synchronize(h), torch.full((i + 1,), float(sum(r + 1 for r in members))),
                    f"{tag}: unnamed op {i}")


def concurrent_sets(sets, tag):
    """Every rank enqueues on all its sets and the global set at once, in a
    rank-dependent order, then synchronizes."""
    rank, size = hvd.rank(), hvd.size()
    mine = [ps for ps in sets if rank in ps.ranks] + [hvd.global_process_set]
    if rank % 2:
        mine.reverse()
    hs = [(ps, hvd.allreduce_async(torch.full((4,), float(rank + 1)), op=hvd.Sum,
                                   name=f"conc{ps.process_set_id}", process_set=ps))
          for ps in mine]
    for ps, h in hs:
        members = ps.ranks if ps.process_set_id else list(range(size))
        check_equal(hvd.synchronize(h), torch.full((4,), float(sum(r + 1 for r in members))),
                    f"{tag}: concurrent allreduce on set {ps.process_set_id}")


if mode == "static":
    # Duplicate sets at init -> ValueError (and a later correct init works).
    # Checked before any peer is contacted, so no rank is left connecting to
    # one that already gave up, whichever rank gets there first: repeated,
    # with a different rank delayed each time.
    for attempt in range(6):
        if int(os.environ["HOROVOD_RANK"]) == attempt % 3:
            time.sleep(0.05)
        raises(ValueError, hvd.init,
               process_sets=[hvd.ProcessSet([0, 1]), hvd.ProcessSet([2, 1]), hvd.ProcessSet([1, 0])],
               contains=("was given twice",), what=f"init with duplicate process sets #{attempt}")
    check(not hvd.is_initialized(), "failed init left Horovod initialized")
    raises(ValueError, hvd.init, process_sets=[hvd.ProcessSet([0, 1, 2])],  # launched at np 3
           contains=("holds every rank", "hvd.global_process_set"),
           what="init with a process set equal to the global set")
    check(not hvd.is_initialized(), "failed init (global set given) left Horovod initialized")
    raises(ValueError, hvd.init, process_sets=[hvd.ProcessSet([0, 5])],
           what="init with a process set naming rank 5 of 3")
    check(not hvd.is_initialized(), "failed init (bad rank) left Horovod initialized")
    ps01, ps12 = hvd.ProcessSet([1, 0]), hvd.ProcessSet([1, 2])
    check_equal(ps01.ranks, [0, 1], "ProcessSet sorts its ranks")
    check(ps01.size() is None and ps01.rank() is None, "unregistered set: size()/rank() None")
    hvd.init(process_sets=[ps01, ps12])
    check_equal(hvd.size(), 3, "static mode runs at np 3")
    check_equal(hvd.global_process_set.process_set_id, 0, "global set id")
    check_equal(hvd.global_process_set.size(), 3, "global set size")
    check_equal(hvd.global_process_set.rank(), hvd.rank(), "global set rank")
    check(ps01.process_set_id != ps12.process_set_id, "distinct ids")
    exercise_set(ps01, "static [0,1]")
    exercise_set(ps12, "static [1,2]")
    concurrent_sets([ps01, ps12], "static")
    # A global barrier completes while an op on set [0,1] is pending on rank 0.
    rank = hvd.rank()
    if rank == 0:
        h = hvd.allreduce_async(torch.ones(2), op=hvd.Sum, name="pending_in_set", process_set=ps01)
        check(not hvd.poll(h), "set op completed before rank 1 submitted it")
        hvd.barrier()
    else:
        hvd.barrier()
        h = (hvd.allreduce_async(torch.ones(2), op=hvd.Sum, name="pending_in_set", process_set=ps01)
             if rank == 1 else None)
    if h is not None:
        check_equal(hvd.synchronize(h), torch.full((2,), 2.0), "set op pending across a global barrier")
    # The same user name in two sets at once (separate per-set queues).
    hs = [hvd.allreduce_async(torch.full((2,), float(ps.process_set_id)), op=hvd.Sum, name="same_name",
                              process_set=ps) for ps in (ps01, ps12) if rank in ps.ranks]
    for h, ps in zip(hs, [ps for ps in (ps01, ps12) if rank in ps.ranks]):
        check_equal(hvd.synchronize(h), torch.full((2,), 2.0 * ps.process_set_id),
                    f"'same_name' in set {ps.ranks}")
    raises(ValueError, hvd.add_process_set, [0, 2], what="add_process_set without dynamic mode")
    raises(ValueError, hvd.allreduce, torch.ones(2), process_set=hvd.ProcessSet([0, 2]),
           what="op on a set that was never registered")
    check(hvd.remove_process_set(hvd.global_process_set) is False, "remove global set -> False")
    check_equal(hvd.global_process_set.process_set_id, 0, "global set still id 0")
    # shutdown() is collective: a rank shutting down fails the others' pending
    # ops, so wait until every rank is done with its set ops.
    hvd.barrier()
    hvd.shutdown()
    check(ps01.process_set_id is None, "shutdown invalidates registered sets")
    done("process_sets static")

elif mode == "dynamic":
    check(os.environ.get("HOROVOD_DYNAMIC_PROCESS_SETS") == "1", "test sets HOROVOD_DYNAMIC_PROCESS_SETS=1")
    for generation, init_kwargs in enumerate([{}, {"process_sets": "dynamic"}]):
        if generation == 1:  # second job generation: dynamic mode from init() alone
            del os.environ["HOROVOD_DYNAMIC_PROCESS_SETS"]
        hvd.init(**init_kwargs)
        tag = f"dynamic gen {generation}"
        ps01 = hvd.add_process_set([0, 1])
        check(isinstance(ps01, hvd.ProcessSet), f"{tag}: add_process_set returns a ProcessSet")
        exercise_set(ps01, f"{tag} [0,1]")
        ps12 = hvd.add_process_set(hvd.ProcessSet([2, 1]))
        exercise_set(ps12, f"{tag} [1,2]")
        concurrent_sets([ps01, ps12], tag)
        raises(ValueError, hvd.add_process_set, hvd.ProcessSet([1, 0]), what=f"{tag}: duplicate set")
        raises(ValueError, hvd.add_process_set, ps12, what=f"{tag}: re-adding a registered object")
        raises(ValueError, hvd.add_process_set, [0, 7], what=f"{tag}: set with a rank >= size")
        check(hvd.remove_process_set(hvd.global_process_set) is False, f"{tag}: remove id 0 -> False")
        check(hvd.remove_process_set(hvd.ProcessSet([0, 2])) is False,
              f"{tag}: removing a never-registered set -> False")
        # The job still works after the failed adds.
        exercise_set(ps01, f"{tag} [0,1] after failed adds")
        ps02 = hvd.add_process_set([0, 2])
        concurrent_sets([ps01, ps12, ps02], f"{tag} three sets")
        check_equal(hvd.allreduce(torch.ones(2), op=hvd.Sum, name="global_after"),
                    torch.full((2,), 3.0), f"{tag}: global allreduce")
        hvd.shutdown()  # with dynamic sets still registered
        check(ps01.process_set_id is None, f"{tag}: shutdown invalidates added sets")
    done("process_sets dynamic")

elif mode == "dynamic_remove":
    hvd.init(process_sets="dynamic")
    tag = "dynamic remove"
    ps01 = hvd.add_process_set([0, 1])
    ps12 = hvd.add_process_set([1, 2])
    exercise_set(ps01, f"{tag} [0,1]")
    old_id = ps01.process_set_id
    check(hvd.remove_process_set(ps01) is True, f"{tag}: remove [0,1]")
    check(ps01.process_set_id is None, f"{tag}: removed set is invalidated")
    check(old_id not in registered(), f"{tag}: removed id {old_id} still registered: {registered()}")
    raises(ValueError, hvd.allreduce, torch.ones(2), process_set=ps01,
           what=f"{tag}: op on a removed set")
    check(hvd.remove_process_set(ps01) is False, f"{tag}: removing twice -> False")
    exercise_set(ps12, f"{tag} [1,2] after removing [0,1]")
    again = hvd.add_process_set([0, 1])  # re-adding after removal works
    exercise_set(again, f"{tag} [0,1] re-added")
    concurrent_sets([again, ps12], f"{tag} after re-add")
    check(hvd.remove_process_set(ps12) is True, f"{tag}: remove [1,2]")
    check(hvd.remove_process_set(again) is True, f"{tag}: remove re-added [0,1]")
    check_equal(hvd.allreduce(torch.ones(2), op=hvd.Sum, name="global_after"),
                torch.full((2,), 3.0), f"{tag}: global allreduce after removals")
    hvd.shutdown()
    done("process_sets dynamic_remove")
else:
    sys.exit(f"unknown mode {mode}")
