"""Async handles, negotiation order, name and argument errors, cross-rank
mismatches, join, barrier, init/shutdown and the upstream API surface."""
import torch

import horovod.torch as hvd
from _common import check, check_equal, expect_raises, run, scatter_rows

UPSTREAM_NAMES = """
init shutdown is_initialized start_timeline stop_timeline size local_size cross_size rank
local_rank cross_rank mpi_threads_supported mpi_enabled mpi_built gloo_enabled gloo_built
nccl_built ddl_built ccl_built cuda_built rocm_built Average Sum Adasum Min Max Product ProcessSet
global_process_set add_process_set remove_process_set HorovodInternalError Compression
allreduce allreduce_async allreduce_ allreduce_async_ grouped_allreduce grouped_allreduce_async
grouped_allreduce_ grouped_allreduce_async_ sparse_allreduce_async allgather allgather_async
grouped_allgather grouped_allgather_async broadcast broadcast_async broadcast_ broadcast_async_
alltoall alltoall_async reducescatter reducescatter_async grouped_reducescatter
grouped_reducescatter_async join barrier poll synchronize broadcast_parameters
broadcast_optimizer_state broadcast_object allgather_object DistributedOptimizer SyncBatchNorm
""".split()


def test_api_surface():
    missing = [n for n in UPSTREAM_NAMES if not hasattr(hvd, n)]
    check(not missing, f"horovod.torch lacks {missing}")
    check(not hasattr(hvd, "is_homogeneous"), "upstream torch does not export is_homogeneous")
    check([hvd.Average, hvd.Sum, hvd.Adasum, hvd.Min, hvd.Max, hvd.Product] == [0, 1, 2, 3, 4, 5],
          "ReduceOp values")
    check(hvd.gloo_built() and hvd.gloo_enabled() and not hvd.mpi_enabled(), "build flags")
    check(isinstance(hvd.nccl_built(), int), "nccl_built() is an int")
    check(0 <= hvd.local_rank() < hvd.local_size() and 0 <= hvd.cross_rank() < hvd.cross_size(),
          "topology")
    import horovod.torch.mpi_ops as mpi_ops
    from horovod.common.exceptions import HorovodInternalError
    check(mpi_ops.allreduce is hvd.allreduce and HorovodInternalError is hvd.HorovodInternalError,
          "module aliases share objects")
    check(issubclass(hvd.HorovodInternalError, RuntimeError), "HorovodInternalError is a RuntimeError")


def test_poll_and_synchronize():
    r, n = hvd.rank(), hvd.size()
    if r == 0:
        h = hvd.allreduce_async(torch.ones(10), name="late", op=hvd.Sum)
        # the other ranks wait in the barrier below, so this cannot have completed
        check(n == 1 or hvd.poll(h) is False, "poll() is False before the peers submitted")
    hvd.barrier()
    if r != 0:
        h = hvd.allreduce_async(torch.ones(10), name="late", op=hvd.Sum)
    check_equal(hvd.synchronize(h), torch.full((10,), float(n)), "late allreduce")
    expect_raises(ValueError, lambda: hvd.poll(h), "poll on a synchronized handle")
    check(hvd.synchronize(h) is None, "synchronize on a synchronized handle returns None")
    h = hvd.allreduce_async(torch.ones(3), name="polled")
    while not hvd.poll(h):
        pass
    check_equal(hvd.synchronize(h), torch.ones(3), "synchronize after poll")


def test_different_submission_orders():
    r, n = hvd.rank(), hvd.size()
    ops = []
    for i in range(24):
        kind = i % 5
        if kind == 0:
            ops.append(lambda i=i: (hvd.allreduce_async(torch.full((i + 1,), float(r)), name=f"o.{i}",
                                                        op=hvd.Sum),
                                    torch.full((i + 1,), float(sum(range(n))))))
        elif kind == 1:
            ops.append(lambda i=i: (hvd.allgather_async(torch.full((r + 1,), i), name=f"o.{i}"),
                                    torch.cat([torch.full((q + 1,), i) for q in range(n)])))
        elif kind == 2:
            ops.append(lambda i=i: (hvd.broadcast_async(torch.full((3,), r), i % n, name=f"o.{i}"),
                                    torch.full((3,), i % n)))
        elif kind == 3:
            ops.append(lambda i=i: (hvd.alltoall_async(torch.full((n,), r), name=f"o.{i}"),
                                    (torch.arange(n), torch.ones(n, dtype=torch.int32))))
        else:
            ops.append(lambda i=i: (hvd.reducescatter_async(torch.full((n, 2), float(i)),
                                                            name=f"o.{i}", op=hvd.Sum),
                                    torch.full((1, 2), float(i * n))))
    order = list(range(len(ops)))
    if r % 2 == 1:
        order.reverse()
    submitted = {i: ops[i]() for i in order}
    for i in range(len(ops)):
        h, want = submitted[i]
        got = hvd.synchronize(h)
        if isinstance(want, tuple):
            check_equal(got[0], want[0], f"op {i} output")
            check_equal(got[1], want[1], f"op {i} received splits")
        else:
            check_equal(got, want, f"op {i}")


def test_duplicate_name_in_flight():
    r, n = hvd.rank(), hvd.size()
    if r == 0:
        h = hvd.allreduce_async(torch.ones(2), name="dup", op=hvd.Sum)
        if n > 1:  # still in flight: the peers are in the barrier
            expect_raises(ValueError, lambda: hvd.allreduce_async(torch.ones(2), name="dup"),
                          "duplicate in-flight name", match="dup")
    hvd.barrier()
    if r != 0:
        h = hvd.allreduce_async(torch.ones(2), name="dup", op=hvd.Sum)
    check_equal(hvd.synchronize(h), torch.full((2,), float(n)), "allreduce after duplicate")
    # the name is free again once synchronized
    check_equal(hvd.allreduce(torch.ones(2), name="dup", op=hvd.Sum), torch.full((2,), float(n)),
                "name reusable")


def test_bad_arguments():
    expect_raises(ValueError, lambda: hvd.allreduce(torch.ones(2, dtype=torch.complex64)),
                  "complex dtype", match="not supported")
    expect_raises(ValueError, lambda: hvd.alltoall_async([1.0, 2.0]), "non-tensor alltoall")
    expect_raises(ValueError, lambda: hvd.reducescatter_async([1.0, 2.0]), "non-tensor reducescatter")
    expect_raises(ValueError, lambda: hvd.allreduce(torch.ones(2), process_set=hvd.ProcessSet([0])),
                  "unregistered process set", match="not registered")


def test_cross_rank_mismatch():
    r, n = hvd.rank(), hvd.size()
    if n == 1:
        return
    e = expect_raises(hvd.HorovodInternalError,
                      lambda: hvd.allreduce(torch.ones(r + 1), name="mm.shape"), "shape mismatch")
    check("Mismatched" in str(e) or "mismatch" in str(e).lower(), f"shape message: {e}")
    dtype = torch.float32 if r == 0 else torch.float64
    expect_raises(hvd.HorovodInternalError,
                  lambda: hvd.allreduce(torch.ones(3, dtype=dtype), name="mm.dtype"), "dtype mismatch")
    expect_raises(hvd.HorovodInternalError,
                  lambda: hvd.broadcast(torch.ones(3), root_rank=r, name="mm.root"), "root mismatch")
    # the job is still usable afterwards
    check_equal(hvd.allreduce(torch.ones(3), name="after.mm", op=hvd.Sum),
                torch.full((3,), float(n)), "allreduce after mismatches")


def test_join_and_barrier():
    r, n = hvd.rank(), hvd.size()
    if r == 0:
        # the others have joined (or will): they contribute zeros
        got = hvd.allreduce(torch.ones(5), name="join.ar", op=hvd.Sum)
        check_equal(got, torch.ones(5), "allreduce with joined ranks")
        if n > 1:
            for op_name, fn in [("allgather", lambda: hvd.allgather(torch.ones(1), name="j.ag")),
                                ("broadcast", lambda: hvd.broadcast(torch.ones(1), 0, name="j.bc")),
                                ("alltoall", lambda: hvd.alltoall(torch.ones(n), name="j.a2a")),
                                ("reducescatter",
                                 lambda: hvd.reducescatter(torch.ones(n), name="j.rs"))]:
                expect_raises(hvd.HorovodInternalError, fn, f"{op_name} with joined ranks",
                              match="join")
    last = hvd.join()
    check(last == 0, f"rank 0 joined last, join() returned {last}")
    last = hvd.join(device=-1)
    check(0 <= last < n, f"join() returned {last}")
    check_equal(hvd.allgather(torch.tensor([last])), torch.full((n,), last), "same join result")
    # a barrier completes while other named ops are pending
    h = hvd.allreduce_async(torch.ones(4), name="pending.at.barrier", op=hvd.Sum)
    hvd.barrier()
    hvd.barrier(process_set=hvd.global_process_set)
    check_equal(hvd.synchronize(h), torch.full((4,), float(n)), "op pending across barrier")


def test_shutdown_and_reinit():
    hvd.shutdown()
    check(not hvd.is_initialized(), "is_initialized() after shutdown")
    expect_raises(ValueError, lambda: hvd.allreduce(torch.ones(1)), "op after shutdown",
                  match="init")
    expect_raises(ValueError, lambda: hvd.size(), "size() after shutdown")
    hvd.init()
    hvd.init()  # idempotent
    check(hvd.is_initialized(), "is_initialized() after re-init")
    check_equal(hvd.allreduce(torch.ones(2), op=hvd.Sum), torch.full((2,), float(hvd.size())),
                "allreduce after re-init (unnamed counters restart)")


def test_process_set_ops():
    """alltoall/reducescatter/allreduce/barrier on a static process set of
    all ranks but the last; the last rank is not a member."""
    r, n = hvd.rank(), hvd.size()
    if n == 1:
        return
    hvd.shutdown()
    ps = hvd.ProcessSet(list(range(n - 1)))
    hvd.init(process_sets=[ps])
    m = n - 1
    if ps.included():
        k = ps.rank()
        check_equal(hvd.allreduce(torch.ones(2), op=hvd.Sum, process_set=ps, name="ps.ar"),
                    torch.full((2,), float(m)), "allreduce on a process set")
        d0 = 2 * m + 1
        x = torch.arange(d0, dtype=torch.float32) * (k + 1)
        start, count = scatter_rows(d0, m, k)
        want = torch.arange(d0, dtype=torch.float32)[start:start + count] * sum(range(1, m + 1))
        check_equal(hvd.reducescatter(x, op=hvd.Sum, process_set=ps, name="ps.rs"), want,
                    "reducescatter on a process set")
        out, recv = hvd.alltoall(torch.full((m,), k), splits=[1] * m, process_set=ps, name="ps.a2a")
        check_equal(out, torch.arange(m), "alltoall on a process set")
        check_equal(recv, torch.ones(m, dtype=torch.int32), "alltoall received splits on a set")
        hvd.barrier(process_set=ps)
        # broadcast root_rank is a global rank
        check_equal(hvd.broadcast(torch.full((2,), r), root_rank=m - 1, process_set=ps),
                    torch.full((2,), m - 1), "broadcast on a process set")
    else:
        expect_raises(ValueError, lambda: hvd.reducescatter(torch.ones(2), process_set=ps),
                      "reducescatter by a non-member")
        expect_raises(ValueError, lambda: hvd.alltoall(torch.ones(2), process_set=ps),
                      "alltoall by a non-member")
    hvd.barrier()


run([test_api_surface, test_poll_and_synchronize, test_different_submission_orders,
     test_duplicate_name_in_flight, test_bad_arguments, test_cross_rank_mismatch,
     test_join_and_barrier, test_shutdown_and_reinit, test_process_set_ops])
