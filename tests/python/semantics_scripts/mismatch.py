"""mismatch.py: cross-rank mismatches (dtype, shape, reduction op, root rank,
prescale/postscale, allgather/alltoall trailing dims / ndim, reducescatter) fail at synchronize on
EVERY rank with HorovodInternalError (a RuntimeError) whose message names the
tensor and the mismatching field; the job keeps working afterwards.
The odd rank out is the last rank. Needs np >= 2."""
import torch

import horovod.torch as hvd
from _sem_common import check, check_equal, done, raises

hvd.init()
rank, size = hvd.rank(), hvd.size()
check(size >= 2, "mismatch.py needs at least 2 ranks")
odd = rank == size - 1
check(issubclass(hvd.HorovodInternalError, RuntimeError), "HorovodInternalError is a RuntimeError")

healthy_round = [0]


def healthy():
    """A normal allreduce (same name every time, so it is a cache hit after
    the first) must still work after each failure."""
    healthy_round[0] += 1
    out = hvd.allreduce(torch.full((7,), float(rank + healthy_round[0])), op=hvd.Sum,
                        name="healthy")
    check_equal(out, torch.full((7,), float(sum(r + healthy_round[0] for r in range(size)))),
                f"allreduce after a mismatch (round {healthy_round[0]})")


def expect_mismatch(case, core_name, submit, *fields, consistent=None):
    """submit() enqueues the op with rank-dependent parameters; it must fail
    at synchronize on every rank. Then a normal allreduce works, and the same
    name used consistently (consistent() -> (handle, expected)) works too."""
    handle = submit()  # enqueue itself must succeed: only the other ranks know better
    e = raises(hvd.HorovodInternalError, hvd.synchronize, handle,
               contains=(core_name,) + fields, what=f"{case} mismatch")
    check(isinstance(e, RuntimeError), f"{case}: error is not a RuntimeError")
    healthy()
    if consistent is not None:
        h, expected, *pick = consistent()  # pick: takes the tensor out of a tuple result
        out = hvd.synchronize(h)
        if pick:
            out = pick[0](out)
        check_equal(out, expected, f"{case}: name re-used consistently after the error")


healthy()

expect_mismatch("dtype", "allreduce.mm_dtype",
                lambda: hvd.allreduce_async(torch.ones(4, dtype=torch.float64 if odd else torch.float32),
                                            name="mm_dtype"),
                "data type",
                consistent=lambda: (hvd.allreduce_async(torch.ones(4), op=hvd.Sum, name="mm_dtype"),
                                    torch.full((4,), float(size))))
expect_mismatch("shape", "allreduce.mm_shape",
                lambda: hvd.allreduce_async(torch.ones(5 if odd else 4), name="mm_shape"),
                "shape",
                consistent=lambda: (hvd.allreduce_async(torch.ones(5), op=hvd.Sum, name="mm_shape"),
                                    torch.full((5,), float(size))))
expect_mismatch("shape-ndim", "allreduce.mm_ndim",
                lambda: hvd.allreduce_async(torch.ones((2, 2) if odd else (4,)), name="mm_ndim"),
                "shape")
expect_mismatch("op", "allreduce.mm_op",
                lambda: hvd.allreduce_async(torch.ones(4), op=hvd.Max if odd else hvd.Sum,
                                            name="mm_op"),
                "reduction op")
expect_mismatch("prescale", "allreduce.mm_prescale",
                lambda: hvd.allreduce_async(torch.ones(4), prescale_factor=2.0 if odd else 1.0,
                                            name="mm_prescale"),
                "prescale")
expect_mismatch("postscale", "allreduce.mm_postscale",
                lambda: hvd.allreduce_async(torch.ones(4), postscale_factor=3.0 if odd else 1.0,
                                            name="mm_postscale"),
                "postscale")
expect_mismatch("broadcast root", "broadcast.mm_root",
                lambda: hvd.broadcast_async(torch.ones(4), root_rank=1 if odd else 0,
                                            name="mm_root"),
                "root",
                consistent=lambda: (hvd.broadcast_async(torch.full((4,), float(rank)), root_rank=1,
                                                        name="mm_root"),
                                    torch.ones(4)))
expect_mismatch("broadcast shape", "broadcast.mm_bshape",
                lambda: hvd.broadcast_async(torch.ones(3 if odd else 4), root_rank=0,
                                            name="mm_bshape"),
                "shape")
expect_mismatch("broadcast dtype", "broadcast.mm_bdtype",
                lambda: hvd.broadcast_async(torch.ones(4, dtype=torch.int32 if odd else torch.int64),
                                            root_rank=0, name="mm_bdtype"),
                "data type")
expect_mismatch("allgather trailing dims", "allgather.mm_gdims",
                lambda: hvd.allgather_async(torch.ones(rank + 1, 4 if odd else 3), name="mm_gdims"),
                "shape",
                consistent=lambda: (hvd.allgather_async(torch.ones(rank + 1, 3), name="mm_gdims"),
                                    torch.ones(sum(r + 1 for r in range(size)), 3)))
expect_mismatch("allgather ndim", "allgather.mm_gndim",
                lambda: hvd.allgather_async(torch.ones((2, 3, 1) if odd else (2, 3)), name="mm_gndim"),
                "shape")
expect_mismatch("allgather dtype", "allgather.mm_gdtype",
                lambda: hvd.allgather_async(torch.ones(2, dtype=torch.uint8 if odd else torch.int8),
                                            name="mm_gdtype"),
                "data type")

expect_mismatch("alltoall trailing dims", "alltoall.mm_a2a",
                lambda: hvd.alltoall_async(torch.ones(size, 4 if odd else 3), name="mm_a2a"),
                "shape",
                consistent=lambda: (hvd.alltoall_async(torch.full((size, 3), float(rank)), name="mm_a2a"),
                                    (torch.arange(size, dtype=torch.float32).repeat_interleave(3)
                                     .reshape(size, 3)),
                                    lambda out: out[0]))  # alltoall handles give (output, splits)
expect_mismatch("alltoall dtype", "alltoall.mm_a2a_dtype",
                lambda: hvd.alltoall_async(torch.ones(size, dtype=torch.int16 if odd else torch.int32),
                                           name="mm_a2a_dtype"),
                "data type")
expect_mismatch("reducescatter shape", "reducescatter.mm_rs",
                lambda: hvd.reducescatter_async(torch.ones(size * (3 if odd else 2)), op=hvd.Sum,
                                                name="mm_rs"),
                "shape",
                consistent=lambda: (hvd.reducescatter_async(torch.ones(size * 2), op=hvd.Sum, name="mm_rs"),
                                    torch.full((2,), float(size))))
expect_mismatch("reducescatter op", "reducescatter.mm_rs_op",
                lambda: hvd.reducescatter_async(torch.ones(size * 2), op=hvd.Max if odd else hvd.Sum,
                                                name="mm_rs_op"),
                "reduction op")

# A name that is in the response cache (completed twice with the same
# parameters) and then comes with a different shape / dtype on one rank:
# the cached response must not be reused.
for i in range(2):
    check_equal(hvd.allreduce(torch.ones(6), op=hvd.Sum, name="cached"),
                torch.full((6,), float(size)), f"cached warm-up {i}")
expect_mismatch("cached name, new shape", "allreduce.cached",
                lambda: hvd.allreduce_async(torch.ones(8 if odd else 6), op=hvd.Sum, name="cached"),
                "shape")
check_equal(hvd.allreduce(torch.ones(6), op=hvd.Sum, name="cached"),
            torch.full((6,), float(size)), "cached name with the original parameters again")
expect_mismatch("cached name, new dtype", "allreduce.cached",
                lambda: hvd.allreduce_async(torch.ones(6, dtype=torch.float64 if odd else torch.float32),
                                            op=hvd.Sum, name="cached"),
                "data type")
# Every rank changes the parameters the same way: no mismatch, a new result.
check_equal(hvd.allreduce(torch.ones(9), op=hvd.Sum, name="cached"),
            torch.full((9,), float(size)), "cached name re-used by all ranks with a new shape")

# A mismatch while other (healthy) ops are in flight: only the bad one fails.
good = [hvd.allreduce_async(torch.full((3,), float(i)), op=hvd.Sum, name=f"bystander{i}")
        for i in range(5)]
bad = hvd.allreduce_async(torch.ones(2 if odd else 3), name="mm_with_bystanders")
raises(hvd.HorovodInternalError, hvd.synchronize, bad, contains=("allreduce.mm_with_bystanders",),
       what="mismatch among bystanders")
for i, h in enumerate(good):
    check_equal(hvd.synchronize(h), torch.full((3,), float(i * size)), f"bystander {i}")

# A grouped allreduce where one member mismatches: the error names that member.
grp = hvd.grouped_allreduce_async([torch.ones(2), torch.ones(5 if odd else 4)], op=hvd.Sum,
                                  name="mm_group")
raises(hvd.HorovodInternalError, hvd.synchronize, grp, contains=("mm_group",), what="grouped mismatch")
healthy()

hvd.shutdown()
done("mismatch", size=size)
