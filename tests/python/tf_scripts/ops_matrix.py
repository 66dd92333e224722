"""Every horovod.tensorflow op x dtype, gradients, mismatches and process
sets in one mode, run by test_tf_ops.py through horovodrun:

    python ops_matrix.py eager|function|graph

graph: TF1 (tf.compat.v1 with v2 behaviour disabled) through a Session.
Data is f(rank, index), so every rank computes the expected results locally.
A rank prints "PASS <check>" per check and "ALL OK rank <r>" at the end; a
failed check raises and the rank exits non-zero.
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
MODE = sys.argv[1]
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

if MODE == "graph":
    tf.compat.v1.disable_v2_behavior()

import horovod.tensorflow as hvd  # noqa: E402

tf.get_logger().setLevel("ERROR")  # one tf.function per check retraces by design

INTS = [tf.uint8, tf.int8, tf.int16, tf.int32, tf.int64]
FLOATS = [tf.float16, tf.bfloat16, tf.float32, tf.float64]
NUMERIC = INTS + FLOATS
SIZES = [0, 1, 7, 1023]

size0 = int(os.environ.get("HOROVOD_SIZE", "1"))
SUBSET = [0, size0 - 1] if size0 >= 3 else ([1] if size0 == 2 else None)
_SUBSET_PS = hvd.ProcessSet(SUBSET) if SUBSET else None
hvd.init(process_sets=[_SUBSET_PS] if SUBSET else None)
R, N = hvd.rank(), hvd.size()
_SESSION = tf.compat.v1.Session() if MODE == "graph" else None


def run(fn, *arrays, dtypes=None):
    """fn(*tensors) -> (nested list of) tensors, run in MODE; numpy results."""
    dtypes = dtypes or [None] * len(arrays)
    if MODE == "graph":
        ts = [tf.constant(a, dtype=d) for a, d in zip(arrays, dtypes)]
        return _SESSION.run(fn(*ts))
    ts = [tf.constant(a, dtype=d) for a, d in zip(arrays, dtypes)]
    f = tf.function(fn) if MODE == "function" else fn
    return tf.nest.map_structure(lambda t: t.numpy() if hasattr(t, "numpy") else t, f(*ts))


def grad_run(fn, x, weight):
    """(fn(x), d sum(fn(x) * weight) / dx) in MODE."""
    if MODE == "graph":
        xt = tf.constant(x)
        y = fn(xt)
        y0 = y[0] if isinstance(y, (tuple, list)) else y
        g = tf.gradients(tf.reduce_sum(y0 * weight), xt)[0]
        return _SESSION.run([y0, g])

    def body(xt):
        with tf.GradientTape() as tape:
            tape.watch(xt)
            y = fn(xt)
            y0 = y[0] if isinstance(y, (tuple, list)) else y
            loss = tf.reduce_sum(y0 * weight)
        return y0, tape.gradient(loss, xt)
    f = tf.function(body) if MODE == "function" else body
    y, g = f(tf.constant(x))
    return y.numpy(), g.numpy()


def values(dtype, rank, n, product=False):
    i = np.arange(n)
    if product:
        v = (i + 2 * rank) % 3 + 1 if dtype == tf.uint8 else (i + 2 * rank) % 5 - 2
    elif dtype == tf.uint8:
        v = (3 * i + 7 * rank) % 11
    elif dtype == tf.bool:
        v = (i + rank) % 2
    else:
        v = (3 * i + 7 * rank) % 11 - 5
    return v


def close(got, want, what, tol=0.0):
    got = np.asarray(got).astype(np.float64)
    want = np.asarray(want).astype(np.float64)
    assert got.shape == want.shape, f"rank {R}: {what}: shape {got.shape} != {want.shape}"
    assert np.allclose(got, want, atol=tol, rtol=tol), f"rank {R}: {what}: {got} != {want}"


CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


@check
def allreduce_ops_dtypes():
    ops = {"Sum": (hvd.Sum, lambda vs: np.sum(vs, 0)), "Min": (hvd.Min, lambda vs: np.min(vs, 0)),
           "Max": (hvd.Max, lambda vs: np.max(vs, 0)),
           "Product": (hvd.Product, lambda vs: np.prod(vs, 0))}
    for dt in NUMERIC:
        cases = [(name, n) for name in ops for n in SIZES]
        arrays = [values(dt, R, n, product=(name == "Product")) for name, n in cases]

        def fn(*ts):
            return [hvd.allreduce(t, op=ops[name][0]) for t, (name, _) in zip(ts, cases)]
        outs = run(fn, *arrays, dtypes=[dt] * len(arrays))
        for out, (name, n) in zip(outs, cases):
            allv = [values(dt, r, n, product=(name == "Product")) for r in range(N)]
            want = ops[name][1](allv).astype(np.int64) if dt in INTS else ops[name][1](allv)
            if dt == tf.uint8:
                want = np.asarray(want) % 256
            elif dt == tf.int8:
                want = (np.asarray(want) + 128) % 256 - 128
            close(out, want, f"allreduce {name} {dt.name} n={n}")
        assert outs[0].dtype == dt.as_numpy_dtype, (outs[0].dtype, dt)


@check
def allreduce_average_and_scaling():
    for dt in FLOATS:
        a = values(dt, R, 7)
        out = run(lambda t: [hvd.allreduce(t, op=hvd.Average),
                             hvd.allreduce(t, op=hvd.Sum, prescale_factor=0.5, postscale_factor=4.0),
                             hvd.allreduce(t)], a, dtypes=[dt])
        s = np.sum([values(dt, r, 7) for r in range(N)], 0)
        tol = 0.05 if dt in (tf.float16, tf.bfloat16) else 1e-6
        close(out[0], s / N, f"average {dt.name}", tol)
        close(out[1], s * 2.0, f"scaled {dt.name}", tol)
        close(out[2], s / N, f"default op {dt.name}", tol)


@check
def grouped_allreduce_mixed():
    arrays = [values(tf.float32, R, 5), values(tf.int32, R, 3), values(tf.float64, R, 0)]
    dts = [tf.float32, tf.int32, tf.float64]
    outs = run(lambda *ts: hvd.grouped_allreduce(list(ts), op=hvd.Sum), *arrays, dtypes=dts)
    for out, dt, a in zip(outs, dts, arrays):
        close(out, np.sum([values(dt, r, len(a)) for r in range(N)], 0), f"grouped {dt.name}")


@check
def allgather_dtypes():
    for dt in NUMERIC + [tf.bool]:
        rows = lambda r: (r + 1) if dt != tf.int16 else r  # int16: rank 0 sends no rows
        a = values(dt, R, rows(R) * 3).reshape(rows(R), 3)
        out = run(lambda t: hvd.allgather(t), a, dtypes=[dt])
        want = np.concatenate([values(dt, r, rows(r) * 3).reshape(rows(r), 3) for r in range(N)])
        close(out, want, f"allgather {dt.name}")


@check
def grouped_allgather_two():
    a, b = values(tf.float32, R, R + 1), values(tf.int64, R, 2 * (R + 2)).reshape(R + 2, 2)
    outs = run(lambda x, y: hvd.grouped_allgather([x, y]), a, b, dtypes=[tf.float32, tf.int64])
    close(outs[0], np.concatenate([values(tf.float32, r, r + 1) for r in range(N)]), "ga0")
    close(outs[1], np.concatenate([values(tf.int64, r, 2 * (r + 2)).reshape(r + 2, 2)
                                   for r in range(N)]), "ga1")


@check
def broadcast_every_root():
    for dt in NUMERIC + [tf.bool]:
        for root in range(N):
            for n in (0, 7):
                out = run(lambda t: hvd.broadcast(t, root), values(dt, R, n), dtypes=[dt])
                close(out, values(dt, root, n), f"broadcast {dt.name} root {root} n={n}")


@check
def alltoall_splits():
    for dt in [tf.uint8, tf.int32, tf.float16, tf.float64, tf.bool]:
        splits = [(R + j) % 3 for j in range(N)]
        a = values(dt, R, 2 * sum(splits)).reshape(sum(splits), 2)
        out, got_splits = run(lambda t: hvd.alltoall(t, splits=splits), a, dtypes=[dt])
        want_rows = []
        for src in range(N):
            s_src = [(src + j) % 3 for j in range(N)]
            rows = values(dt, src, 2 * sum(s_src)).reshape(sum(s_src), 2)
            want_rows.append(rows[sum(s_src[:R]):sum(s_src[:R + 1])])
        close(out, np.concatenate(want_rows), f"alltoall {dt.name}")
        close(got_splits, [(src + R) % 3 for src in range(N)], "received splits")
        eq = run(lambda t: hvd.alltoall(t), values(dt, R, 2 * N), dtypes=[dt])
        close(eq, np.concatenate([values(dt, s, 2 * N)[2 * R:2 * R + 2] for s in range(N)]),
              f"alltoall equal {dt.name}")


@check
def reducescatter_odd_sizes():
    for dt in [tf.int32, tf.int64, tf.float16, tf.float32, tf.float64]:
        for d0 in (N, 5, 2 * N + 1):
            a = values(dt, R, d0 * 2).reshape(d0, 2)
            out, avg = run(lambda t: [hvd.reducescatter(t, op=hvd.Sum), hvd.reducescatter(t)],
                           a, dtypes=[dt])
            total = np.sum([values(dt, r, d0 * 2).reshape(d0, 2) for r in range(N)], 0)
            counts = [d0 // N + (1 if r < d0 % N else 0) for r in range(N)]
            mine = total[sum(counts[:R]):sum(counts[:R + 1])]
            close(out, mine, f"reducescatter {dt.name} d0={d0}")
            if dt in FLOATS:
                close(avg, mine / N, f"reducescatter avg {dt.name}", 0.05)
    outs = run(lambda x, y: hvd.grouped_reducescatter([x, y], op=hvd.Sum),
               np.ones([3, 2], np.float32), np.ones([N], np.int32))
    counts = [3 // N + (1 if r < 3 % N else 0) for r in range(N)]
    close(outs[0], np.full([counts[R], 2], N), "grouped reducescatter 0")
    close(outs[1], np.full([1], N), "grouped reducescatter 1")


@check
def gradients():
    w = float(R + 1)
    tri = N * (N + 1) / 2
    x = np.arange(6, dtype=np.float32).reshape(3, 2) + R
    _, g = grad_run(lambda t: hvd.allreduce(t, op=hvd.Sum), x, w)
    close(g, np.full_like(x, tri), "allreduce Sum grad")
    _, g = grad_run(lambda t: hvd.allreduce(t, op=hvd.Average), x, w)
    close(g, np.full_like(x, tri / N), "allreduce Average grad", 1e-6)
    _, g = grad_run(lambda t: hvd.allreduce(t, op=hvd.Sum, prescale_factor=2.0), x, w)
    close(g, np.full_like(x, 2 * tri), "allreduce prescaled grad")
    xr = np.ones([R + 1, 2], np.float32)
    y, g = grad_run(lambda t: hvd.allgather(t), xr, w)
    close(g, np.full_like(xr, tri / N), "allgather grad", 1e-6)
    for root in range(N):
        _, g = grad_run(lambda t: hvd.broadcast(t, root), x, w)
        close(g, np.full_like(x, tri / N if R == root else 0.0), f"broadcast grad root {root}",
              1e-6)
    splits = [1] * N
    xa = np.ones([N, 2], np.float32)
    _, g = grad_run(lambda t: hvd.alltoall(t, splits=splits), xa, w)
    close(g, np.array([[j + 1.0] * 2 for j in range(N)]), "alltoall grad")
    xs = np.ones([2 * N + 1, 2], np.float32)
    counts = [(2 * N + 1) // N + (1 if r < (2 * N + 1) % N else 0) for r in range(N)]
    want = np.concatenate([np.full([counts[r], 2], r + 1.0) for r in range(N)])
    _, g = grad_run(lambda t: hvd.reducescatter(t, op=hvd.Sum), xs, w)
    close(g, want, "reducescatter Sum grad")
    _, g = grad_run(lambda t: hvd.reducescatter(t, op=hvd.Average), xs, w)
    close(g, want / N, "reducescatter Average grad", 1e-6)
    _, g = grad_run(lambda t: hvd.grouped_allreduce([t, t * 2], op=hvd.Sum)[1], x, w)
    close(g, np.full_like(x, 2 * tri), "grouped allreduce grad")


def expect_error(fn, arrays, dtypes, exc, text):
    try:
        run(fn, *arrays, dtypes=dtypes)
    except exc as e:
        assert text in str(e), f"rank {R}: expected '{text}' in: {e}"
        return
    raise AssertionError(f"rank {R}: no {exc.__name__} ('{text}')")


@check
def mismatches_named():
    if N < 2:
        return
    expect_error(lambda t: hvd.allreduce(t, name="mm_shape"), [np.ones([2 + R], np.float32)],
                 [None], tf.errors.FailedPreconditionError, "Mismatched")
    dt = tf.float32 if R == 0 else tf.float64
    expect_error(lambda t: hvd.allreduce(t, name="mm_dtype"), [np.ones([2])], [dt],
                 tf.errors.FailedPreconditionError, "Mismatched")
    expect_error(lambda t: hvd.broadcast(t, R, name="mm_root"), [np.ones([2], np.float32)],
                 [None], tf.errors.FailedPreconditionError, "Mismatched")
    # A bad argument on every rank: rejected at enqueue, named.
    expect_error(lambda t: hvd.alltoall(t, splits=[5] * N, name="bad_splits"),
                 [np.ones([N], np.float32)], [None], tf.errors.InvalidArgumentError, "bad_splits")
    # The job goes on afterwards.
    close(run(lambda t: hvd.allreduce(t, op=hvd.Sum), np.ones([3], np.float32)),
          np.full([3], N), "after mismatches")


@check
def process_sets():
    if SUBSET is None:
        return
    ps = _SUBSET_PS
    inc = run(lambda: hvd.process_set_included_op(ps.process_set_id))
    assert int(inc) == (1 if R in SUBSET else 0), inc
    assert int(run(lambda: hvd.size_op(ps.process_set_id))) == len(SUBSET)
    if R in SUBSET:
        out = run(lambda t: hvd.allreduce(t, op=hvd.Sum, process_set=ps), np.full([4], R + 1.0))
        close(out, np.full([4], float(sum(r + 1 for r in SUBSET))), "process set allreduce")
        g = run(lambda t: hvd.allgather(t, process_set=ps), np.full([1], R, np.int32))
        close(g, SUBSET, "process set allgather")
        b = run(lambda t: hvd.broadcast(t, SUBSET[-1], process_set=ps), np.full([2], R, np.int32))
        close(b, [SUBSET[-1]] * 2, "process set broadcast")
    else:
        expect_error(lambda t: hvd.allreduce(t, process_set=ps), [np.ones([2], np.float32)],
                     [None], tf.errors.InvalidArgumentError, "not a member")


@check
def topology_ops():
    vals = run(lambda: [hvd.size_op(), hvd.rank_op(), hvd.local_size_op(), hvd.local_rank_op(),
                        hvd.process_set_included_op()])
    assert [int(v) for v in vals] == [N, R, hvd.local_size(), hvd.local_rank(), 1], vals


@check
def barrier_and_join():
    if MODE == "graph":
        _SESSION.run(hvd.barrier())
        return
    if MODE == "function":
        def f():
            hvd.barrier()
        tf.function(f)()
        return
    hvd.barrier()
    # Rank N-1 joins at once; the others run one more unnamed allreduce
    # (rank N-1 contributes zeros), then join; names agree afterwards.
    if R != N - 1:
        out = hvd.allreduce(tf.ones([3]), op=hvd.Sum)
        close(out, np.full([3], N - 1), "allreduce with a joined rank")
    last = hvd.join()
    assert int(last) in range(N), last
    close(hvd.allreduce(tf.ones([2]), op=hvd.Sum), np.full([2], N), "after join")


for c in CHECKS:
    c()
    print(f"PASS {c.__name__}", flush=True)
print(f"ALL OK rank {R}", flush=True)
