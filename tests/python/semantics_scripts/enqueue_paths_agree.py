"""enqueue_paths_agree.py: the two kinds of enqueue binding, the METH_FASTCALL
per-op Runtime.enqueue_allreduce (csrc/python/fast_enqueue.cc) and the pybind11
definitions of every other op (csrc/python/enqueue_binding.cc), check their
arguments by the same rules (NOTE [One home for enqueue rules] in
csrc/python/enqueue_args.h): the same bad argument raises the same exception
with the same message through either, and the same good arguments give the
same results. The torch adapter's two allreduce paths (a named contiguous
tensor: handles.submit_allreduce, whose handle is the core Work; anything
else: handles.submit, a Handle) are compared the same way.

Runs at any np (the test runs it at 1 and 2)."""
import re

import horovod.torch as hvd
import numpy as np
import torch
from _sem_common import check, check_equal, done

from horovod_accel import _core
from horovod_accel.common.default_runtime import DEFAULT_RUNTIME
from horovod_accel.common.exceptions import HorovodInternalError
from horovod_accel.common.handles import Handle

hvd.init()
rt = DEFAULT_RUNTIME.initialized_runtime()
rank, size = hvd.rank(), hvd.size()
F32, BOOL, SUM = _core.DTYPE_FLOAT32, _core.DTYPE_BOOL, _core.OP_SUM
BUF = np.zeros(64 * size, dtype=np.float64)  # big enough for every good call below
P = BUF.ctypes.data

# ---------------------------------------------------------------- outcomes


def outcome(fn, *args, **kwargs):
    """(exception type, message) of fn(*args, **kwargs), with the enqueue
    method's signature at the start of the message replaced by '<method>';
    ('ok', '') if it enqueued (its Works are finished, freeing their names)."""
    try:
        works = fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001  (the point is which one)
        return type(e), re.sub(r"^enqueue_\w+\([^)]*\): ", "<method>: ", str(e))
    for w in works if isinstance(works, list) else [works]:
        while not w.finish(1.0):
            pass
    return "ok", ""


def agree(what, calls, exc_type, fragment):
    """Every call in `calls` ((label, fn, args, kwargs)) raises exc_type with
    one and the same message, which contains `fragment`."""
    seen = {label: outcome(fn, *args, **kwargs) for label, fn, args, kwargs in calls}
    first_label = calls[0][0]
    first = seen[first_label]
    for label, got in seen.items():
        check(got == first, f"{what}: {label} gave {got!r} but {first_label} gave {first!r}")
    check(first[0] is exc_type and fragment in first[1],
          f"{what}: expected {exc_type.__name__} with {fragment!r}, got {first!r}")


# ---------------------------------------------------------------- binding: single-tensor methods

PARAMS = {
    "enqueue_allreduce": ("name", "process_set", "input", "output", "dtype", "shape", "device",
                          "op", "prescale", "postscale"),
    "enqueue_reducescatter": ("name", "process_set", "input", "output", "dtype", "shape",
                              "device", "op", "prescale", "postscale"),
    "enqueue_broadcast": ("name", "process_set", "input", "output", "dtype", "shape", "device",
                          "root_rank"),
    "enqueue_allgather": ("name", "process_set", "input", "dtype", "shape", "device"),
    "enqueue_alltoall": ("name", "process_set", "input", "dtype", "shape", "device", "splits"),
}
GOOD = {"name": "pa.bad", "process_set": 0, "input": P, "output": P, "dtype": F32,
        "shape": [2 * size], "device": -1, "op": SUM, "prescale": 1.0, "postscale": 1.0,
        "root_rank": 0, "splits": []}


def single(method, **bad):
    params = PARAMS[method]
    return [bad[p] if p in bad else GOOD[p] for p in params]


def group_of(method, **bad):
    """The grouped twin's arguments for one tensor, or None if `method` has none."""
    grouped = {"enqueue_allreduce": "enqueue_grouped_allreduce",
               "enqueue_reducescatter": "enqueue_grouped_reducescatter",
               "enqueue_allgather": "enqueue_grouped_allgather"}.get(method)
    if grouped is None:
        return None, None
    v = {**GOOD, **bad}
    args = [[v["name"]], v["process_set"], [v["input"]]]
    if "output" in PARAMS[method]:
        args.append([v["output"]])
    args += [[v["dtype"]], [v["shape"]], v["device"]]
    if "op" in PARAMS[method]:
        args += [v["op"], v["prescale"], v["postscale"]]
    return grouped, args


# (argument, bad value, exception, fragment). A ValueError is a value rule
# of the binding or the core's refusal: the grouped twins must give it too.
LEADING = [
    ("name", b"pa.bad", TypeError, "<method>: name must be a str, not bytes"),
    ("name", 3, TypeError, "<method>: name must be a str, not int"),
    ("process_set", "0", TypeError, "<method>: process_set must be an int, not str"),
    ("process_set", 1.0, TypeError, "<method>: process_set must be an int, not float"),
    ("process_set", -2**40, OverflowError, "<method>: process_set -1099511627776 is out of range"),
    ("process_set", 12345, ValueError, "process set 12345 is not registered"),
    ("input", 1.5, TypeError, "<method>: input must be an int (a memory address), not float"),
    ("input", -1, OverflowError, "<method>: input -1 is out of range"),
    ("output", "0", TypeError, "<method>: output must be an int (a memory address), not str"),
    ("dtype", "float32", TypeError, "<method>: dtype must be an int, not str"),
    ("dtype", 2**32 + F32, OverflowError, "<method>: dtype 4294967303 is out of range"),
    ("dtype", 99, ValueError, "unknown dtype code 99"),
    ("dtype", -1, ValueError, "unknown dtype code -1"),
    ("shape", 4, TypeError, "<method>: shape must be a sequence of ints, not int"),
    ("shape", "4", TypeError, "<method>: shape must be a sequence of ints, not str"),
    ("shape", (4.0,), TypeError, "<method>: shape[0] must be an int, not float"),
    ("shape", [2**70], OverflowError, "<method>: shape[0] 1180591620717411303424 is out of range"),
    ("shape", (-4,), ValueError, "tensor 'pa.bad' has a negative dimension"),
    ("device", "cpu", TypeError, "<method>: device must be -1 (CPU) or a DeviceRef, not str"),
    ("device", 1.0, TypeError, "<method>: device must be -1 (CPU) or a DeviceRef, not float"),
    ("device", 2**40, OverflowError, "<method>: device 1099511627776 is out of range"),
    ("device", 0, ValueError, "an accelerator tensor must be described by a DeviceRef"),
    ("device", _core.DeviceRef("", 0), ValueError, "is on accelerator 0 without a device type"),
]

for param, value, exc, fragment in LEADING:
    calls = []
    for method, params in PARAMS.items():
        if param not in params:
            continue
        calls.append((method, getattr(rt, method), single(method, **{param: value}), {}))
        grouped, gargs = group_of(method, **{param: value})
        if grouped is not None and (exc is ValueError or param in ("process_set", "device")):
            calls.append((grouped, getattr(rt, grouped), gargs, {}))
    agree(f"{param}={value!r}", calls, exc, fragment)

# Argument counts and keywords, for every method.
for method, params in PARAMS.items():
    n = len(params)
    fn = getattr(rt, method)
    good = single(method)
    for args, fragment in ((good[:-1], f"takes {n} positional arguments, got {n - 1}"),
                           (good + [0], f"takes {n} positional arguments, got {n + 1}")):
        agree(f"{method} with {len(args)} arguments", [(method, fn, args, {})], TypeError,
              "<method>: " + fragment)
    agree(f"{method} with a keyword", [(method, fn, good[:-1], {params[-1]: good[-1]})],
          TypeError, "<method>: takes no keyword arguments")

# The reducing ops' trailing (op, prescale, postscale): the fast path and
# the three pybind11 twins.
REDUCING = [
    ({"op": "sum"}, TypeError, "<method>: op must be an int, not str"),
    ({"op": 2**40}, OverflowError, "<method>: op 1099511627776 is out of range"),
    ({"op": 42}, ValueError, "unknown reduction op 42 for 'pa.bad'"),
    ({"prescale": "1"}, TypeError, "<method>: prescale must be a float, not str"),
    ({"postscale": None}, TypeError, "<method>: postscale must be a float, not NoneType"),
    ({"dtype": BOOL}, ValueError, "cannot reduce bool tensor 'pa.bad'"),
    ({"op": _core.OP_ADASUM, "dtype": _core.DTYPE_INT32}, None, "pa.bad"),
]
for bad, exc, fragment in REDUCING:
    calls = []
    for method in ("enqueue_allreduce", "enqueue_reducescatter"):
        grouped, gargs = group_of(method, **bad)
        calls += [(method, getattr(rt, method), single(method, **bad), {}),
                  (grouped, getattr(rt, grouped), gargs, {})]
    if exc is None:  # Adasum: what each op says differs by op (allreduce: ValueError)
        agree(f"allreduce {bad}", calls[:2], ValueError, "needs a floating-point tensor")
        agree(f"reducescatter {bad}", calls[2:], NotImplementedError, "does not support op=Adasum")
    else:
        agree(f"{bad}", calls, exc, fragment)

# The other ops' own arguments (no fast twin: each rule once, through its method).
OWN = [
    ("enqueue_broadcast", {"root_rank": "0"}, TypeError,
     "<method>: root_rank must be an int, not str"),
    ("enqueue_broadcast", {"root_rank": size}, ValueError,
     f"broadcast root rank {size} of 'pa.bad' is not a member of process set 0."),
    ("enqueue_alltoall", {"splits": 3}, TypeError,
     "<method>: splits must be a sequence of ints, not int"),
    ("enqueue_alltoall", {"splits": [1.0] * size}, TypeError,
     "<method>: splits[0] must be an int, not float"),
    ("enqueue_alltoall", {"splits": [1] * (size + 1)}, ValueError,
     f"alltoall splits of 'pa.bad' have {size + 1} entries"),
    ("enqueue_alltoall", {"splits": [-1] + [1] * (size - 1)}, ValueError,
     "alltoall splits of 'pa.bad' must be >= 0"),
    ("enqueue_allgather", {"shape": ()}, ValueError,
     "allgather of 'pa.bad' needs a tensor with at least one dimension, got a scalar."),
]
for method, bad, exc, fragment in OWN:
    agree(f"{method} {bad}", [(method, getattr(rt, method), single(method, **bad), {})], exc,
          fragment)

# Grouped ops: their lists, element by element.
GA = "enqueue_grouped_allreduce"
_, GOOD_GROUP = group_of("enqueue_allreduce")
GROUPED = [
    (0, "pa.bad", TypeError, "<method>: names must be a sequence of str, not str"),
    (0, [b"pa.bad"], TypeError, "<method>: names[0] must be a str, not bytes"),
    (2, [1.5], TypeError, "<method>: inputs[0] must be an int (a memory address), not float"),
    (3, P, TypeError, "<method>: outputs must be a sequence of ints, not int"),
    (4, [F32, "x"], TypeError, "<method>: dtypes[1] must be an int, not str"),
    (5, [[4, 2.0]], TypeError, "<method>: shapes[0][1] must be an int, not float"),
    (2, [P, P], ValueError, "grouped op: inputs has the wrong length (2 entries for 1 names)"),
    (4, [], ValueError, "grouped op: dtypes has the wrong length (0 entries for 1 names)"),
]
for index, value, exc, fragment in GROUPED:
    args = list(GOOD_GROUP)
    args[index] = value
    agree(f"{GA} argument {index}={value!r}", [(GA, getattr(rt, GA), args, {})], exc, fragment)

# A name in flight is refused by every method alike.
held = np.zeros(4, dtype=np.float32)
w = rt.enqueue_allreduce("pa.held", 0, held.ctypes.data, held.ctypes.data, F32, [4], -1, SUM,
                         1.0, 1.0)
calls = [(m, getattr(rt, m), single(m, name="pa.held"), {}) for m in PARAMS]
calls += [(GA, getattr(rt, GA), group_of("enqueue_allreduce", name="pa.held")[1], {})]
agree("name in flight", calls, ValueError, "pa.held")
while not w.finish(1.0):
    pass

# ---------------------------------------------------------------- binding: good arguments


def values(code, n):
    """n elements of dtype `code` that differ per rank and reduce exactly."""
    base = (np.arange(n) % 5 + rank + 1).astype(np.float32)
    if code == _core.DTYPE_BFLOAT16:
        return (base.view(np.uint32) >> 16).astype(np.uint16)
    kind = {_core.DTYPE_UINT8: np.uint8, _core.DTYPE_INT8: np.int8, _core.DTYPE_INT16: np.int16,
            _core.DTYPE_UINT16: np.uint16, _core.DTYPE_INT32: np.int32,
            _core.DTYPE_INT64: np.int64, _core.DTYPE_FLOAT16: np.float16,
            _core.DTYPE_FLOAT32: np.float32, _core.DTYPE_FLOAT64: np.float64}[code]
    return base.astype(kind)


CODES = [_core.DTYPE_UINT8, _core.DTYPE_INT8, _core.DTYPE_INT16, _core.DTYPE_UINT16,
         _core.DTYPE_INT32, _core.DTYPE_INT64, _core.DTYPE_FLOAT16, _core.DTYPE_BFLOAT16,
         _core.DTYPE_FLOAT32, _core.DTYPE_FLOAT64]
SHAPES = [(5,), (2, 3), (), (0,), (0, 3), (3, 0)]
OPS = [_core.OP_SUM, _core.OP_AVERAGE, _core.OP_MIN, _core.OP_MAX, _core.OP_PRODUCT]


def reduce_both(tag, code, shape, op, pre, post):
    """The result of one allreduce through the fast path and through the
    pybind11 grouped twin, as bytes."""
    n = int(np.prod(shape))
    x = values(code, n)
    outs = []
    for path in ("fast", "grouped"):
        out = np.zeros_like(x)
        name = f"pa.good.{tag}.{path}"
        if path == "fast":
            works = [rt.enqueue_allreduce(name, 0, x.ctypes.data, out.ctypes.data, code, shape,
                                          -1, op, pre, post)]
        else:
            works = rt.enqueue_grouped_allreduce([name], 0, [x.ctypes.data], [out.ctypes.data],
                                                 [code], [shape], -1, op, pre, post)
        for w in works:
            while not w.finish(1.0):
                pass
        outs.append(out.tobytes())
    return outs


for code in CODES:
    for shape in SHAPES:
        fast, grouped = reduce_both(f"{code}.{len(shape)}.{shape}", code, shape, SUM, 1.0, 1.0)
        check(fast == grouped, f"dtype {code} shape {shape}: the two paths' sums differ")
    for op in OPS:
        fast, grouped = reduce_both(f"{code}.op{op}", code, (7,), op, 2.0, 0.5)
        check(fast == grouped, f"dtype {code} op {op} scaled: the two paths' results differ")

# Integer-like and float-like objects (numpy scalars) are taken where ints
# and floats are expected, by both kinds alike.
x = values(F32, 6)
outs = [np.zeros_like(x) for _ in range(2)]
works = [rt.enqueue_allreduce("pa.numpy.fast", np.int32(0), np.uint64(x.ctypes.data),
                              np.uint64(outs[0].ctypes.data), np.int64(F32), (np.int64(6),), -1,
                              np.int8(SUM), np.float32(2.0), np.float64(0.5))]
works += rt.enqueue_grouped_allreduce(["pa.numpy.grouped"], np.int32(0), [np.uint64(x.ctypes.data)],
                                      [np.uint64(outs[1].ctypes.data)], [np.int64(F32)],
                                      [(np.int64(6),)], -1, np.int8(SUM), np.float32(2.0),
                                      np.float64(0.5))
for w in works:
    while not w.finish(1.0):
        pass
check(outs[0].tobytes() == outs[1].tobytes() and outs[0][0] == sum(r + 1 for r in range(size)),
      f"numpy scalar arguments: {outs!r}")

# ---------------------------------------------------------------- torch adapter: both paths

TORCH_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
                torch.bfloat16, torch.float32, torch.float64]


def torch_pair(dtype, shape):
    """The same values as a contiguous tensor (named, the per-op path: the
    handle is the core Work) and, where it has elements, a non-contiguous one
    (the general path: a Handle)."""
    n = int(np.prod(shape))
    base = (torch.arange(n) % 5 + rank + 1).to(dtype).reshape(shape)
    wide = torch.zeros(shape + (2,), dtype=dtype)
    wide[..., 0] = base
    return base.clone(), wide[..., 0]


for dtype in TORCH_DTYPES:
    for shape in ((5,), (2, 3), (0,), (0, 3), ()):
        for in_place in (True, False):
            fast_in, slow_in = torch_pair(dtype, shape)  # in-place rounds change them
            fn = hvd.allreduce_async_ if in_place else hvd.allreduce_async
            tag = f"pt.good.{dtype}.{shape}.{in_place}"
            # h_fast: a contiguous tensor takes the per-op path; h_slow (unnamed,
            # non-contiguous) the general one.
            h_fast, h_slow = fn(fast_in, name=tag, op=hvd.Sum), fn(slow_in, op=hvd.Sum)
            check(type(h_fast) is _core.Work and type(h_slow) is Handle,
                  f"{tag}: handles {type(h_fast).__name__}, {type(h_slow).__name__}")
            check(isinstance(hvd.poll(h_fast), bool) and isinstance(hvd.poll(h_slow), bool),
                  f"{tag}: poll() of a pending handle")
            r_fast, r_slow = hvd.synchronize(h_fast), hvd.synchronize(h_slow)
            check_equal(r_slow.contiguous(), r_fast, f"{tag}: results of the two paths")
            check(hvd.synchronize(h_fast) is None and hvd.synchronize(h_slow) is None,
                  f"{tag}: a second synchronize() returns None on both paths")
            for h in (h_fast, h_slow):
                try:
                    hvd.poll(h)
                except ValueError as e:
                    check("was not created or has been cleared" in str(e), f"{tag}: poll: {e}")
                else:
                    check(False, f"{tag}: poll() of a synchronized {type(h).__name__}")


def torch_both(what, exc_type, fragment, **kwargs):
    """allreduce_async_ of a contiguous and a non-contiguous float tensor with
    the same bad arguments: the same exception and message."""
    fast_in, slow_in = torch_pair(kwargs.pop("dtype", torch.float32), (4,))
    got = []
    for t in (fast_in, slow_in):
        try:
            h = hvd.allreduce_async_(t, **kwargs)
        except Exception as e:  # noqa: BLE001
            got.append((type(e), str(e)))
        else:
            hvd.synchronize(h)
            got.append(("ok", ""))
    check(got[0] == got[1], f"torch {what}: per-op path {got[0]!r}, general path {got[1]!r}")
    check(got[0][0] is exc_type and fragment in got[0][1], f"torch {what}: got {got[0]!r}")


torch_both("op 42", ValueError, "unknown reduction op 42 for 'allreduce.pt.bad'", name="pt.bad",
           op=42)
torch_both("op 1.5", TypeError, "op must be an int, not float", name="pt.bad", op=1.5)
torch_both("prescale 'x'", TypeError, "prescale must be a float, not str", name="pt.bad",
           op=hvd.Sum, prescale_factor="x")
torch_both("postscale None", TypeError, "postscale must be a float, not NoneType",
           name="pt.bad", op=hvd.Sum, postscale_factor=None)
torch_both("bool tensor", ValueError, "cannot reduce bool tensor 'allreduce.pt.bad'",
           name="pt.bad", op=hvd.Sum, dtype=torch.bool)
torch_both("unregistered process set", ValueError, "is not registered", name="pt.bad",
           op=hvd.Sum, process_set=hvd.ProcessSet([0]))
h = hvd.allreduce_async_(torch.zeros(4), name="pt.held", op=hvd.Sum)
torch_both("name in flight", ValueError, "allreduce.pt.held", name="pt.held", op=hvd.Sum)
hvd.synchronize(h)

if size > 1:
    # A collective failure reaches synchronize() as HorovodInternalError with
    # the core's message, whichever handle type the op has.
    msgs = []
    for contiguous in (True, False):
        t = torch.zeros(4 + rank * 2)
        if not contiguous:
            t = torch.zeros(4 + rank * 2, 2)[:, 0]
        h = hvd.allreduce_async_(t, name="pt.mismatch", op=hvd.Sum)
        try:
            hvd.synchronize(h)
        except HorovodInternalError as e:
            msgs.append(str(e))
        else:
            check(False, f"mismatched shapes (contiguous={contiguous}) did not fail")
    check(msgs[0] == msgs[1] and "pt.mismatch" in msgs[0],
          f"the two handle types report a failure alike: {msgs!r}")

hvd.shutdown()
agree("after shutdown", [(m, getattr(rt, m), single(m), {}) for m in PARAMS], ValueError,
      "not been initialized")
done("enqueue_paths_agree")
