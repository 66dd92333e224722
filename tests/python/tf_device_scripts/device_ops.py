"""Every horovod.tensorflow collective on tensors of a TensorFlow
PluggableDevice: the emulated "GCU" device (tests/emulated/tf_gcu) whose
Horovod kernels hand TF's stream to the GCU device plugin over the emulated
TOPS runtime + ECCL. Run by test_tf_device.py through horovodrun under
scripts/emulated_gcu.sh:

    python device_ops.py eager|function|graph

For each check, on every rank: the inputs are put on /device:GCU:0 first;
then the Horovod op runs there, and the check asserts that (a) its outputs
live on the GCU, (b) the GCU plugin ran collectives for it (the core's
per-plugin counters, as the conformance suite's proof), (c) no payload
crossed between host and device while it ran (the emulated runtime's copy
counters: no host staging), and (d) the values are right (read back after
the counters). graph: TF1 graphs (v2 behaviour disabled) in a Session; the
copies of the run that only makes the inputs are subtracted from the run
that makes them and runs the op (a graph re-creates its inputs per run).
"""
import ctypes
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
MODE = sys.argv[1]
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

# Before anything lists TensorFlow's devices: a PluggableDevice library can
# only be added while the device list is not initialized.
from tensorflow.python.framework import load_library  # noqa: E402 (TF 2.21 has no public alias)

load_library.load_pluggable_device_library(os.environ["HVDA_TEST_TF_PLUGIN"])
if MODE == "graph":
    tf.compat.v1.disable_v2_behavior()

import horovod.tensorflow as hvd  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "job_lib"))
from check_harness import check, close, equal, keep_only, main, raises  # noqa: E402

tf.get_logger().setLevel("ERROR")
DEV = "/device:GCU:0"
REDUCE_TYPES = [tf.float32, tf.float64, tf.float16, tf.bfloat16, tf.int32, tf.int64, tf.uint8,
                tf.int8]  # ECCL has no int16/uint16 reductions (the plugin refuses them)
MOVE_TYPES = REDUCE_TYPES + [tf.int16, tf.uint16, tf.bool]
_EMU = ctypes.CDLL(os.environ["HVDA_TEST_EMU_CORE"])
_SESSION = None


def copies():
    """(host->device bytes, device->host bytes) the emulated runtime copied so far."""
    out = (ctypes.c_uint64 * 4)()
    _EMU.hvda_emu_copy_counts(out)
    return out[1], out[3]


def plugin_ops():
    from horovod_accel.common.default_runtime import DEFAULT_RUNTIME
    return sum(DEFAULT_RUNTIME.initialized_runtime().plugin_activity("gcu").values())


def values(rank, n, dtype, rows=3, cols=5):
    """Rank-dependent data that every rank can recompute."""
    a = (np.arange(rows * cols).reshape(rows, cols) % 7 + rank + 1)
    if dtype == tf.bool:
        return (a % 2 == 0)
    return a.astype(dtype.as_numpy_dtype)


def on_device(fn, arrays):
    """fn(*tensors on the GCU) in MODE; returns the results as numpy after
    asserting (a)-(c) of the module docstring."""
    global _SESSION
    if MODE == "graph":
        if _SESSION is None:
            # No constant folding: it would compute device ops of constant
            # inputs on the host at graph optimization time.
            config = tf.compat.v1.ConfigProto()
            config.graph_options.rewrite_options.constant_folding = 2  # RewriterConfig.OFF
            config.graph_options.optimizer_options.opt_level = -1  # OptimizerOptions.L0
            _SESSION = tf.compat.v1.Session(config=config)
        with tf.device(DEV):
            ins = [tf.identity(tf.constant(a)) for a in arrays]
            outs = fn(*ins)
        flat = tf.nest.flatten(outs)
        for t in flat:
            assert t.device.endswith("GCU:0"), f"{t.name} placed on {t.device}"
        c0 = copies()
        _SESSION.run([t.op for t in ins])
        c1 = copies()
        p0 = plugin_ops()
        _SESSION.run([t.op for t in flat])
        c2, p1 = copies(), plugin_ops()
        staged = tuple((c2[i] - c1[i]) - (c1[i] - c0[i]) for i in range(2))
        result = _SESSION.run(outs)
    else:
        with tf.device(DEV):
            ins = [tf.identity(tf.constant(a)) for a in arrays]
        for t in ins:
            assert t.device.endswith("GCU:0"), t.device
        f = tf.function(fn) if MODE == "function" else fn
        c0, p0 = copies(), plugin_ops()
        with tf.device(DEV):
            outs = f(*ins)
        c1, p1 = copies(), plugin_ops()
        staged = (c1[0] - c0[0], c1[1] - c0[1])
        for t in tf.nest.flatten(outs):
            assert t.device.endswith("GCU:0"), f"result on {t.device}"
        result = tf.nest.map_structure(lambda t: t.numpy(), outs)
    # TensorFlow keeps int32 tensors of a device in host memory (its rule
    # for GPU-like devices), so it copies an int32 input to the device for a
    # kernel that takes device memory: that copy is TensorFlow's, and the
    # only one allowed.
    # And a tf.function returns int32 results in host memory.
    tf_in = sum(np.asarray(a).nbytes for a in arrays if np.asarray(a).dtype == np.int32)
    tf_out = sum(np.asarray(a).nbytes for a in tf.nest.flatten(result)
                 if np.asarray(a).dtype == np.int32)
    assert p1 > p0, "the GCU plugin ran no collective for this op"
    assert staged[0] == tf_in and staged[1] in (0, tf_out), (
        f"the op copied payload between host and device (host->device, device->host bytes: "
        f"{staged}; TensorFlow's own int32 placement accounts for {tf_in} host->device, "
        f"{tf_out} device->host)")
    return result


@check
def allreduce_every_reduce_type():
    n, r = hvd.size(), hvd.rank()
    for dt in REDUCE_TYPES:
        got = on_device(lambda x: hvd.allreduce(x, op=hvd.Sum), [values(r, n, dt)])
        want = sum(values(k, n, dt).astype(np.float64) for k in range(n))
        close(got, want if dt not in (tf.uint8, tf.int8) else want.astype(dt.as_numpy_dtype),
              f"allreduce {dt.name}", tol=1e-2 if dt in (tf.float16, tf.bfloat16) else 1e-6)


@check
def allreduce_average_scaled_and_zero_length():
    n, r = hvd.size(), hvd.rank()
    x = values(r, n, tf.float32)
    got = on_device(lambda t: hvd.allreduce(t, op=hvd.Average, prescale_factor=2.0,
                                            postscale_factor=0.5), [x])
    close(got, np.mean([values(k, n, tf.float32) for k in range(n)], axis=0), "average")
    got = on_device(lambda t: hvd.allreduce(t, op=hvd.Sum), [np.zeros((0, 4), np.float32)])
    equal(got.shape, (0, 4), "zero-length allreduce shape")


@check
def grouped_allreduce_and_reducescatter():
    n, r = hvd.size(), hvd.rank()
    a, b = values(r, n, tf.float32), values(r, n, tf.float64, rows=2 * n + 1)
    ga, gb = on_device(lambda x, y: hvd.grouped_allreduce([x, y], op=hvd.Sum), [a, b])
    close(ga, sum(values(k, n, tf.float32) for k in range(n)), "grouped allreduce 0")
    close(gb, sum(values(k, n, tf.float64, rows=2 * n + 1) for k in range(n)), "grouped 1")
    rows = 2 * n + 1
    total = sum(values(k, n, tf.float32, rows=rows) for k in range(n))
    mine = np.array_split(total, n)[r]
    got = on_device(lambda x: hvd.reducescatter(x, op=hvd.Sum),
                    [values(r, n, tf.float32, rows=rows)])
    close(got, mine, "reducescatter")
    (g0,) = on_device(lambda x: hvd.grouped_reducescatter([x], op=hvd.Sum),
                      [values(r, n, tf.float32, rows=rows)])
    close(g0, mine, "grouped reducescatter")


@check
def broadcast_every_type():
    n, r = hvd.size(), hvd.rank()
    root = n - 1
    for dt in MOVE_TYPES:
        got = on_device(lambda x: hvd.broadcast(x, root_rank=root), [values(r, n, dt)])
        equal(got, values(root, n, dt), f"broadcast {dt.name}")


@check
def allgather_every_type_ragged():
    n, r = hvd.size(), hvd.rank()
    for dt in MOVE_TYPES:
        got = on_device(lambda x: hvd.allgather(x), [values(r, n, dt, rows=r + 1)])
        equal(got, np.concatenate([values(k, n, dt, rows=k + 1) for k in range(n)]),
              f"allgather {dt.name}")
    g0, g1 = on_device(lambda x, y: hvd.grouped_allgather([x, y]),
                       [values(r, n, tf.float32, rows=r), values(r, n, tf.int32, rows=2)])
    equal(g0, np.concatenate([values(k, n, tf.float32, rows=k) for k in range(n)]), "grouped 0")
    equal(g1, np.concatenate([values(k, n, tf.int32, rows=2) for k in range(n)]), "grouped 1")


@check
def alltoall_with_splits():
    n, r = hvd.size(), hvd.rank()
    for dt in (tf.float32, tf.int16):
        # rank r sends j + 1 rows to rank j; rows are numbered by sender.
        splits = [j + 1 for j in range(n)]
        x = values(r, n, dt, rows=sum(splits))
        out, received = on_device(lambda t: hvd.alltoall(t, splits=splits), [x])
        parts = [np.split(values(k, n, dt, rows=sum(splits)), np.cumsum(splits)[:-1])[r]
                 for k in range(n)]
        equal(out, np.concatenate(parts), f"alltoall {dt.name}")
        equal(received, [r + 1] * n, "received splits")


@check
def allreduce_reads_what_the_device_just_computed():
    # The input is made by a GCU kernel (MatMul) on TF's stream right before
    # the collective; with every stream operation delayed
    # (HVDA_EMU_STREAM_DELAY_US) the collective reads stale memory unless it
    # waits for TF's stream (the event the core records there).
    # Several kernels queue on TF's stream, so with a per-operation delay
    # the last one finishes well after the collective's own first delay.
    n, r = hvd.size(), hvd.rank()
    a = values(r, n, tf.float32, rows=4, cols=3)
    b = values(0, n, tf.float32, rows=3, cols=2)
    eye = np.eye(3, dtype=np.float32)

    def chain(x, y, e):
        for _ in range(3):
            x = tf.matmul(x, e)
        return hvd.allreduce(tf.matmul(x, y), op=hvd.Sum)

    got = on_device(chain, [a, b, eye])
    close(got, sum(values(k, n, tf.float32, rows=4, cols=3) @ b for k in range(n)),
          "allreduce of a device-computed tensor")


@check
def mismatch_is_the_named_error():
    n, r = hvd.size(), hvd.rank()
    if n == 1:
        return
    dt = tf.float32 if r == 0 else tf.float64
    with tf.device(DEV):
        x = tf.identity(tf.constant(values(r, n, dt)))

    def run():
        if MODE == "graph":
            with tf.device(DEV):
                y = hvd.allreduce(tf.identity(tf.constant(values(r, n, dt))), name="gcu.mismatch")
            return _SESSION.run(y)
        with tf.device(DEV):
            return hvd.allreduce(x, name="gcu.mismatch").numpy()

    raises((tf.errors.FailedPreconditionError,), run, "dtype mismatch on the GCU",
           match="gcu.mismatch")


if __name__ == "__main__":
    only = os.environ.get("HVDA_TEST_ONLY_CHECK")  # one check alone (the slow-stream test)
    if only:
        keep_only(only)
    sys.exit(main(hvd))
