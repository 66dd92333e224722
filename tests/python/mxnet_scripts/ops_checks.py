"""Every horovod.mxnet collective, every dtype, in place and out of place,
process sets, zero-length tensors, engine ordering and errors:
    horovodrun -np N .venv-mxnet/bin/python tests/python/mxnet_scripts/ops_checks.py
Values are small integers f(rank, index), exact in every dtype, so expected
results need no communication."""
import gc
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "job_lib"))
os.environ["HOROVOD_DYNAMIC_PROCESS_SETS"] = "1"  # process_set_ops_and_non_members adds one

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402
from mxnet.base import MXNetError  # noqa: E402

import horovod.mxnet as hvd  # noqa: E402
from check_harness import check, close, equal, main, raises  # noqa: E402

DTYPES = ["float16", "float32", "float64", "int32", "int64", "uint8", "int8"]
SHAPES = [(5,), (3, 4)]


def values(rank, shape, dtype, salt=0):
    """Integers 1..5 as a function of (rank, index, salt)."""
    n = int(np.prod(shape))
    return ((np.arange(n) * 7 + rank * 3 + salt) % 5 + 1).reshape(shape).astype(dtype)


def nd(array):
    return mx.nd.array(array, dtype=array.dtype)


def ranks():
    return range(hvd.size())


def expected_reduction(op, shape, dtype, salt=0, members=None):
    stack = np.stack([values(r, shape, "float64", salt) for r in (members or ranks())])
    n = len(stack)
    result = {hvd.Sum: stack.sum(0), hvd.Min: stack.min(0), hvd.Max: stack.max(0),
              hvd.Product: stack.prod(0), hvd.Average: stack.sum(0) / n}[op]
    if np.issubdtype(np.dtype(dtype), np.integer):
        result = np.floor(result)  # the core truncates scaled integers
    return result.astype(dtype)


def tolerance(dtype):
    return 2e-3 if dtype == "float16" else 1e-6


OPS = [("sum", hvd.Sum), ("min", hvd.Min), ("max", hvd.Max), ("product", hvd.Product),
       ("average", hvd.Average)]


@check
def allreduce_every_dtype_and_op_out_of_place_and_in_place():
    pending = []  # everything is pushed before anything is read
    for dtype in DTYPES:
        for shape in SHAPES:
            for op_name, op in OPS:
                salt = len(pending)
                x = nd(values(hvd.rank(), shape, dtype, salt))
                out = hvd.allreduce(x, op=op, name=f"ar.{dtype}.{len(shape)}.{op_name}")
                y = nd(values(hvd.rank(), shape, dtype, salt))
                same = hvd.allreduce_(y, op=op, name=f"ar_.{dtype}.{len(shape)}.{op_name}")
                assert same is y
                pending.append((x, out, y, op, shape, dtype, salt))
    for x, out, y, op, shape, dtype, salt in pending:
        want = expected_reduction(op, shape, dtype, salt)
        what = f"allreduce {dtype} {shape} op {op}"
        assert out.dtype == np.dtype(dtype) and out.shape == shape, what
        close(out.asnumpy(), want, what, tolerance(dtype))
        close(y.asnumpy(), want, what + " in place", tolerance(dtype))
        equal(x.asnumpy(), values(hvd.rank(), shape, dtype, salt), what + ": input modified")


@check
def allreduce_unnamed_scaled_and_deprecated_average():
    x = nd(values(hvd.rank(), (6,), "float32"))
    out = hvd.allreduce(x, prescale_factor=0.5, postscale_factor=3.0, op=hvd.Sum)
    close(out.asnumpy(), expected_reduction(hvd.Sum, (6,), "float32") * 1.5, "pre/postscale")
    avg = hvd.allreduce(x)  # op defaults to Average
    close(avg.asnumpy(), expected_reduction(hvd.Average, (6,), "float32"), "default op")
    summed = hvd.allreduce(x, average=False)
    close(summed.asnumpy(), expected_reduction(hvd.Sum, (6,), "float32"), "average=False")


@check
def adasum_allreduce():
    # adasum(a, a) == a, at any number of ranks.
    x = mx.nd.array([1.0, -2.0, 3.0, 0.5])
    close(hvd.allreduce(x, op=hvd.Adasum, name="ada").asnumpy(), x.asnumpy(), "Adasum")
    raises(ValueError, lambda: hvd.allreduce(mx.nd.ones((2,), dtype="int32"), op=hvd.Adasum),
           "integer Adasum", match="floating-point")


@check
def grouped_allreduce_mixed_dtypes():
    shapes_dtypes = [((4,), "float32"), ((2, 3), "int64"), ((7,), "float16"), ((3,), "uint8")]
    xs = [nd(values(hvd.rank(), s, d, i)) for i, (s, d) in enumerate(shapes_dtypes)]
    outs = hvd.grouped_allreduce(xs, op=hvd.Sum, name="group")
    ys = [nd(values(hvd.rank(), s, d, i)) for i, (s, d) in enumerate(shapes_dtypes)]
    assert hvd.grouped_allreduce_(ys, op=hvd.Sum) == ys
    unnamed = hvd.grouped_allreduce(xs, op=hvd.Max)
    for i, (s, d) in enumerate(shapes_dtypes):
        close(outs[i].asnumpy(), expected_reduction(hvd.Sum, s, d, i), f"group {i}")
        close(ys[i].asnumpy(), expected_reduction(hvd.Sum, s, d, i), f"group in place {i}")
        close(unnamed[i].asnumpy(), expected_reduction(hvd.Max, s, d, i), f"unnamed group {i}")
    assert hvd.grouped_allreduce([]) == [] and hvd.grouped_allreduce_([]) == []


@check
def broadcast_every_dtype_and_root():
    pending = []
    for dtype in DTYPES + ["bool"]:
        for root in ranks():
            src = values(hvd.rank(), (3, 2), "int64", root) % 2 if dtype == "bool" else \
                values(hvd.rank(), (3, 2), dtype, root)
            x = nd(src.astype(dtype))
            out = hvd.broadcast(x, root_rank=root, name=f"bc.{dtype}.{root}")
            y = nd(src.astype(dtype))
            assert hvd.broadcast_(y, root) is y
            pending.append((x, out, y, src.astype(dtype), root, dtype))
    for x, out, y, src, root, dtype in pending:
        want = (values(root, (3, 2), "int64", root) % 2 if dtype == "bool"
                else values(root, (3, 2), dtype, root)).astype(dtype)
        equal(out.asnumpy(), want, f"broadcast {dtype} from {root}")
        equal(y.asnumpy(), want, f"broadcast_ {dtype} from {root}")
        equal(x.asnumpy(), src, f"broadcast {dtype}: input modified")


@check
def allgather_and_grouped_allgather_variable_rows():
    for dtype in DTYPES:
        x = nd(values(hvd.rank(), (hvd.rank() + 1, 3), dtype))
        out = hvd.allgather(x)
        want = np.concatenate([values(r, (r + 1, 3), dtype) for r in ranks()])
        equal(out.asnumpy(), want, f"allgather {dtype}")
    xs = [nd(values(hvd.rank(), (hvd.rank() + 1,), "float32")),
          nd(values(hvd.rank(), (2, 2), "int32", 1))]
    outs = hvd.grouped_allgather(xs, name="gg")
    equal(outs[0].asnumpy(), np.concatenate([values(r, (r + 1,), "float32") for r in ranks()]),
          "grouped_allgather 0")
    equal(outs[1].asnumpy(), np.concatenate([values(r, (2, 2), "int32", 1) for r in ranks()]),
          "grouped_allgather 1")


def alltoall_block(src, dst, rows, dtype):
    """The rows rank src sends to rank dst: value 10*src + dst."""
    return np.full((rows, 2), 10 * src + dst).astype(dtype)


def sent_rows(src, dst):
    return (src + dst) % 2 + 1


@check
def alltoall_with_and_without_splits():
    n, me = hvd.size(), hvd.rank()
    for dtype in ["float32", "int64", "uint8"]:
        x = nd(np.concatenate([alltoall_block(me, d, sent_rows(me, d), dtype) for d in ranks()]))
        splits = [sent_rows(me, d) for d in ranks()]
        want = np.concatenate([alltoall_block(s, me, sent_rows(s, me), dtype) for s in ranks()])
        for given in (splits, mx.nd.array(splits, dtype="int32")):
            out, received = hvd.alltoall(x, given)
            equal(out.asnumpy(), want, f"alltoall {dtype}")
            assert received.dtype == np.int32, received.dtype
            equal(received.asnumpy(), [sent_rows(s, me) for s in ranks()], "received splits")
    x = nd(np.concatenate([alltoall_block(me, d, 2, "float32") for d in ranks()]))
    out = hvd.alltoall(x)  # equal split: no received_splits
    equal(out.asnumpy(), np.concatenate([alltoall_block(s, me, 2, "float32") for s in ranks()]),
          "alltoall equal split")
    raises(ValueError, lambda: hvd.alltoall(x, mx.nd.array([2.0] * n)), "float splits",
           match="integer")


@check
def reducescatter_uneven_rows_and_grouped():
    n, me = hvd.size(), hvd.rank()
    d0 = 2 * n + 1
    lo = sum(d0 // n + (1 if r < d0 % n else 0) for r in range(me))
    rows = d0 // n + (1 if me < d0 % n else 0)
    for dtype in ["float32", "float64", "int32", "int64", "float16"]:
        x = nd(values(me, (d0, 3), dtype))
        for op in (hvd.Sum, hvd.Average):
            out = hvd.reducescatter(x, op=op)
            want = expected_reduction(op, (d0, 3), dtype)[lo:lo + rows]
            close(out.asnumpy(), want, f"reducescatter {dtype} op {op}", tolerance(dtype))
    xs = [nd(values(me, (d0,), "float32")), nd(values(me, (d0, 2), "int32", 1))]
    outs = hvd.grouped_reducescatter(xs, op=hvd.Sum, name="grs")
    close(outs[0].asnumpy(), expected_reduction(hvd.Sum, (d0,), "float32")[lo:lo + rows], "grs 0")
    close(outs[1].asnumpy(), expected_reduction(hvd.Sum, (d0, 2), "int32", 1)[lo:lo + rows],
          "grs 1")
    raises(ValueError, lambda: hvd.reducescatter(mx.nd.array(1.0)), "scalar reducescatter")


@check
def process_set_ops_and_non_members():
    n, me = hvd.size(), hvd.rank()
    if n == 1:
        return  # the only possible set is the global one
    members = [0, n - 1] if n >= 3 else [n - 1]
    ps = hvd.add_process_set(members)
    try:
        if me not in members:
            x = nd(values(me, (4,), "float32"))
            raises(ValueError, lambda: hvd.allreduce(x, process_set=ps), "non-member allreduce",
                   match="not a member")
            raises(MXNetError, lambda: hvd.broadcast_(x, members[0], process_set=ps),
                   "non-member broadcast")
            raises(ValueError, lambda: hvd.allgather(x, process_set=ps), "non-member allgather")
            return
        x = nd(values(me, (len(members) * 2, 2), "float32"))
        summed = hvd.allreduce(x, op=hvd.Sum, process_set=ps, name="ps")
        close(summed.asnumpy(), expected_reduction(hvd.Sum, x.shape, "float32", 0, members),
              "process set allreduce")
        b = hvd.broadcast(x, root_rank=members[-1], process_set=ps)
        equal(b.asnumpy(), values(members[-1], x.shape, "float32"), "process set broadcast")
        g = hvd.allgather(x, process_set=ps)
        equal(g.asnumpy(), np.concatenate([values(r, x.shape, "float32") for r in members]),
              "process set allgather")
        me_in_set = members.index(me)
        rs = hvd.reducescatter(x, op=hvd.Sum, process_set=ps)
        close(rs.asnumpy(), expected_reduction(hvd.Sum, x.shape, "float32", 0, members)
              [2 * me_in_set:2 * me_in_set + 2], "process set reducescatter")
        a = hvd.alltoall(x, process_set=ps)
        equal(a.asnumpy(), np.concatenate([values(r, x.shape, "float32")[2 * me_in_set:
                                                                           2 * me_in_set + 2]
                                           for r in members]), "process set alltoall")
    finally:
        mx.nd.waitall()
        hvd.remove_process_set(ps)
    raises(ValueError, lambda: hvd.allreduce(nd(values(me, (2,), "float32")), process_set=ps),
           "removed set", match="not registered")


@check
def zero_length_tensors():
    me = hvd.rank()
    empty = nd(np.zeros((0,), "float32"))
    out = hvd.allreduce(empty, name="z.ar")
    assert out.shape == (0,) and out.asnumpy().size == 0
    hvd.allreduce_(empty, name="z.ar_").wait_to_read()
    b = hvd.broadcast(nd(np.zeros((0, 3), "int32")), root_rank=0, name="z.bc")
    assert b.shape == (0, 3), b.shape
    g = hvd.allgather(nd(values(me, (me % 2, 2), "float32")), name="z.ag")
    equal(g.asnumpy(), np.concatenate([values(r, (r % 2, 2), "float32") for r in ranks()]),
          "allgather with empty ranks")
    group = hvd.grouped_allreduce([empty, nd(values(me, (3,), "float32"))], op=hvd.Sum)
    close(group[1].asnumpy(), expected_reduction(hvd.Sum, (3,), "float32"), "group with empty")
    rs = hvd.reducescatter(nd(np.zeros((0, 2), "float32")), name="z.rs")
    assert rs.shape == (0, 2), rs.shape


@check
def engine_ops_do_not_block_the_caller():
    # Rank 0 pushes an allreduce that the others only submit after a barrier
    # rank 0 reaches after the push: if the push waited for the collective,
    # the job would deadlock.
    x = nd(values(hvd.rank(), (8,), "float32"))
    if hvd.rank() == 0:
        out = hvd.allreduce(x, op=hvd.Sum, name="late")
        hvd.barrier()
    else:
        hvd.barrier()
        out = hvd.allreduce(x, op=hvd.Sum, name="late")
    close(out.asnumpy(), expected_reduction(hvd.Sum, (8,), "float32"), "late allreduce")


@check
def later_mxnet_reads_wait_for_the_collective():
    x = mx.nd.ones((1000,))
    hvd.allreduce_(x, op=hvd.Sum, name="order")
    y = x * 2  # pushed right after: the engine runs it after the allreduce
    close(y.asnumpy(), np.full(1000, 2.0 * hvd.size()), "read after in-place allreduce")
    z = mx.nd.ones((1000,))
    out = hvd.allreduce(z, op=hvd.Sum, name="order2")
    z[:] = 5  # a later write of the input waits for the collective's read
    close(out.asnumpy(), np.full(1000, float(hvd.size())), "input overwritten afterwards")


@check
def temporary_inputs_live_until_the_collective_is_done():
    outs = [hvd.allreduce(mx.nd.ones((64,)) * (i + 1), op=hvd.Sum) for i in range(4)]
    gc.collect()
    for i, out in enumerate(outs):
        close(out.asnumpy(), np.full(64, (i + 1.0) * hvd.size()), f"temporary input {i}")


@check
def same_name_twice_in_flight_runs_in_order():
    a = hvd.allreduce(nd(values(hvd.rank(), (5,), "float32")), op=hvd.Sum, name="dup")
    b = hvd.allreduce(nd(values(hvd.rank(), (5,), "float32", 1)), op=hvd.Sum, name="dup")
    close(a.asnumpy(), expected_reduction(hvd.Sum, (5,), "float32"), "first of a name")
    close(b.asnumpy(), expected_reduction(hvd.Sum, (5,), "float32", 1), "second of a name")


@check
def argument_errors_at_the_call():
    x = mx.nd.ones((3,))
    for fn, what in [(lambda: hvd.allreduce(mx.nd.ones((3,), dtype="bool")), "bool allreduce"),
                     (lambda: hvd.allreduce(np.ones(3)), "numpy input"),
                     (lambda: hvd.grouped_allreduce_([x, x]), "in-place group repeats"),
                     (lambda: hvd.allgather([1, 2]), "list input")]:
        e = raises(ValueError, fn, what)
        assert isinstance(e, MXNetError), f"{what}: {type(e)} is not an MXNetError"
    e = raises(ValueError, lambda: hvd.allreduce(mx.nd.ones((3,), dtype="bool"), name="flags"),
               "bool allreduce", match="flags")
    raises(ValueError, lambda: hvd.allreduce(x, process_set=hvd.ProcessSet([0])),
           "unregistered set", match="not registered")
    raises(NotImplementedError, lambda: hvd.reducescatter(mx.nd.ones((2 * hvd.size(),)),
                                                          op=hvd.Adasum), "Adasum reducescatter")


@check
def cross_rank_mismatches_raise_mxnet_errors_naming_the_tensor():
    if hvd.size() == 1:
        return
    me = hvd.rank()
    out = hvd.allreduce(mx.nd.ones((3 + me,)), name="bad_shape")
    raises(MXNetError, out.wait_to_read, "shape mismatch", match="bad_shape")
    x = mx.nd.ones((4,), dtype="int32" if me % 2 else "float32")
    out = hvd.allreduce(x, name="bad_dtype")
    raises(MXNetError, out.asnumpy, "dtype mismatch", match="bad_dtype")
    y = mx.nd.ones((2, 2))
    hvd.broadcast_(y, root_rank=me, name="bad_root")
    raises(MXNetError, y.wait_to_read, "root mismatch", match="bad_root")
    e = raises(MXNetError, lambda: hvd.allgather(mx.nd.ones((2, me + 1)), name="bad_gather"),
               "allgather mismatch", match="bad_gather")
    assert isinstance(e, hvd.HorovodInternalError), type(e)
    # The job goes on.
    ok = hvd.allreduce(mx.nd.ones((2,)), op=hvd.Sum, name="after_errors")
    close(ok.asnumpy(), np.full(2, float(hvd.size())), "after errors")


@check
def object_collectives():
    n = hvd.size()
    obj = {"from": hvd.rank(), "fn": (lambda v: v + 1)} if hvd.rank() == n - 1 else None
    got = hvd.broadcast_object(obj, root_rank=n - 1)
    assert got["from"] == n - 1 and got["fn"](1) == 2, got
    gathered = hvd.allgather_object({"rank": hvd.rank(), "pad": "x" * hvd.rank()})
    assert gathered == [{"rank": r, "pad": "x" * r} for r in ranks()], gathered


@check
def join_with_uneven_work_and_barrier():
    hvd.barrier()
    me = hvd.rank()
    results = []
    for k in range(me + 1):  # rank r runs r + 1 allreduces, then joins
        results.append(hvd.allreduce_(mx.nd.ones((3,)), op=hvd.Sum, name=f"uneven.{k}"))
    last = hvd.join()
    assert 0 <= last < hvd.size(), last
    for k, out in enumerate(results):  # ranks below k had joined: they added zeros
        close(out.asnumpy(), np.full(3, float(hvd.size() - k)), f"allreduce {k} with joined ranks")
    after = hvd.allreduce(mx.nd.ones((2,)), op=hvd.Sum)  # unnamed numbering realigned
    close(after.asnumpy(), np.full(2, float(hvd.size())), "after join")


GATE = threading.Event()


class _Gate(mx.operator.CustomOp):
    """Copies its input once GATE is set: an MXNet operation that finishes
    when the check says so."""

    def forward(self, is_train, req, in_data, out_data, aux):
        GATE.wait()
        self.assign(out_data[0], req[0], in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        raise NotImplementedError


@mx.operator.register("hvd_test_gate")
class _GateProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(need_top_grad=False)

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _Gate()


@check
def ops_pushed_before_shutdown_never_reach_the_next_job():
    gated = mx.nd.Custom(mx.nd.ones((3,)), op_type="hvd_test_gate")
    hvd.allreduce_(gated, op=hvd.Sum, name="stale")  # waits for the gate
    hvd.shutdown()
    hvd.init()
    GATE.set()  # the allreduce runs now, in the next job: it must not be submitted
    raises(MXNetError, gated.wait_to_read, "stale op", match="before hvd.shutdown()")
    fresh = hvd.allreduce(mx.nd.ones((2,)), op=hvd.Sum, name="stale")
    close(fresh.asnumpy(), np.full(2, float(hvd.size())), "the name in the next job")


if __name__ == "__main__":
    sys.exit(main(hvd))
