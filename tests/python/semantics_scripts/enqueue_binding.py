"""enqueue_binding.py: the core's per-op allreduce binding
(Runtime.enqueue_allreduce, NOTE [Per-op binding] in csrc/python/fast_enqueue.cc)
takes its ten arguments as documented in docs/design/core_binding.md, accepts a
torch.Size, tuple or list shape, reduces correctly, and refuses bad arguments
with TypeError / ValueError instead of crashing or enqueueing.

Runs at any np; every rank sums rank + 1."""
import numpy as np

import horovod.torch as hvd
from horovod_accel import _core
from horovod_accel.common.default_runtime import DEFAULT_RUNTIME
from _sem_common import check, check_equal, done, raises

hvd.init()
rt = DEFAULT_RUNTIME.initialized_runtime()
rank, size = hvd.rank(), hvd.size()
F32, SUM = _core.DTYPE_FLOAT32, _core.OP_SUM
expected = float(sum(r + 1 for r in range(size)))


def run(name, shape, n, device=-1, pre=1.0, post=1.0):
    x = np.full(n, rank + 1, dtype=np.float32)
    out = np.zeros(n, dtype=np.float32)
    w = rt.enqueue_allreduce(name, 0, x.ctypes.data, out.ctypes.data, F32, shape, device, SUM,
                             pre, post)
    check(isinstance(w, _core.Work), f"{name}: enqueue_allreduce returned {type(w).__name__}")
    while not w.finish(1.0):
        pass
    return out


import torch  # noqa: E402  (torch.Size is the shape the torch adapter passes)
for shape in (torch.Size([6]), (6,), [6], torch.Size([2, 3]), range(6, 7)):
    out = run(f"eb.shape.{type(shape).__name__}.{len(shape)}", shape, 6)
    check_equal(out.tolist(), [expected] * 6, f"Sum with shape {shape!r}")
# Zero-length and scale factors (ints are accepted where floats are expected).
check_equal(run("eb.empty", (0,), 0).tolist(), [], "zero-length Sum")
check_equal(run("eb.scaled", [4], 4, pre=2, post=0.5).tolist(), [expected] * 4,
            "Sum with prescale 2 and postscale 0.5")

x = np.zeros(4, dtype=np.float32)
p = x.ctypes.data
good = ["eb.bad", 0, p, p, F32, [4], -1, SUM, 1.0, 1.0]


def with_arg(i, value):
    args = list(good)
    args[i] = value
    return args


raises(TypeError, rt.enqueue_allreduce, *good[:9], contains=("10 positional arguments", "got 9"),
       what="9 arguments")
raises(TypeError, rt.enqueue_allreduce, *with_arg(0, b"eb.bad"), contains=("name must be a str",),
       what="bytes name")
raises(TypeError, rt.enqueue_allreduce, *with_arg(1, "0"), what="str process set")
raises(TypeError, rt.enqueue_allreduce, *with_arg(2, 1.5), what="float address")
raises(OverflowError, rt.enqueue_allreduce, *with_arg(3, -1), what="negative address")
raises(OverflowError, rt.enqueue_allreduce, *with_arg(4, 2**32 + F32), contains=("dtype", "out of range"),
       what="dtype beyond a C int (must not wrap to a valid code)")
raises(OverflowError, rt.enqueue_allreduce, *with_arg(1, -2**40), contains=("process_set",),
       what="process set beyond a C int")
raises(TypeError, rt.enqueue_allreduce, *with_arg(5, 4), contains=("sequence",),
       what="int shape")
raises(TypeError, rt.enqueue_allreduce, *with_arg(5, (4.0,)), what="float dimension")
raises(TypeError, rt.enqueue_allreduce, *with_arg(8, "1"), what="str prescale")
raises(ValueError, rt.enqueue_allreduce, *with_arg(4, 99), contains=("unknown dtype code 99",),
       what="unknown dtype")
raises(ValueError, rt.enqueue_allreduce, *with_arg(5, (-4,)), contains=("negative dimension",),
       what="negative dimension")
raises(ValueError, rt.enqueue_allreduce, *with_arg(6, 0), contains=("DeviceRef",),
       what="bare accelerator index")
raises(ValueError, rt.enqueue_allreduce, *with_arg(7, 42), contains=("unknown reduction op",),
       what="unknown op")
raises(ValueError, rt.enqueue_allreduce, *with_arg(1, 12345), contains=("not registered",),
       what="unknown process set")
# A refused op reserves nothing: the name is still free afterwards.
check_equal(run("eb.bad", [4], 4).tolist(), [expected] * 4, "name of refused ops reused")
# A name in flight is refused (ValueError), and free again once finished.
y = np.zeros(4, dtype=np.float32)
w = rt.enqueue_allreduce("eb.twice", 0, y.ctypes.data, y.ctypes.data, F32, [4], -1, SUM, 1.0, 1.0)
raises(ValueError, rt.enqueue_allreduce, "eb.twice", 0, p, p, F32, [4], -1, SUM, 1.0, 1.0,
       contains=("already in flight",), what="name in flight")
while not w.finish(1.0):
    pass
check_equal(run("eb.twice", [4], 4).tolist(), [expected] * 4, "name reused after finish")

# _core.Work (NOTE [Work handle] in csrc/python/work_handle.h): what the
# handles module calls on it, positionally and by keyword, and the refusals.
w = rt.enqueue_allreduce("eb.work", 0, y.ctypes.data, y.ctypes.data, F32, [4], -1, SUM, 1.0, 1.0)
check(w.wait(timeout_seconds=30.0) is True, "Work.wait(timeout_seconds=...) returns True once done")
check(w.wait() is True and w.is_completed() is True, "Work.wait() without a timeout")
check("completed" in repr(w), f"repr of a completed Work: {w!r}")
check(w.output() is None and w.received_splits() == [] and w.join_result() == -1,
      "an allreduce's Work has no output, splits or join result")
raises(ValueError, rt.enqueue_allreduce, "eb.work", 0, p, p, F32, [4], -1, SUM, 1.0, 1.0,
       contains=("already in flight",), what="name held until release_name()")
w.release_name()
w.release_name()  # idempotent
check(w.finish(timeout=1.0) is True, "Work.finish(timeout=...) after release_name()")
raises(TypeError, w.finish, what="Work.finish() without its timeout")
raises(TypeError, w.wait, 1.0, 2.0, what="Work.wait() with two arguments")
raises(TypeError, w.wait, timeout=1.0, what="Work.wait() with finish's keyword")
raises(TypeError, w.finish, "1", what="Work.finish() with a str timeout")
raises(TypeError, _core.Work, what="Work() from Python")
check(len({w: 1}) == 1, "a Work is hashable (handles are dict keys)")
check_equal(run("eb.work", [4], 4).tolist(), [expected] * 4, "name reused after release_name()")

hvd.shutdown()
# After shutdown the binding refuses ops instead of touching a dead runtime.
raises(ValueError, rt.enqueue_allreduce, *good, contains=("not been initialized",),
       what="after shutdown")
done("enqueue_binding")
