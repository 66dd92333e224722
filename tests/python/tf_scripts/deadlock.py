"""deadlock.py MODE: TensorFlow ops and the core's deadlock detection (NOTE
[Deadlock detection] in csrc/common/coordinator.h; NOTE [Blocking kernels in
eager mode] in csrc/tensorflow/async_op.cc). Run by test_tf_ops.py at np 2 and
3 under a hard timeout, with HOROVOD_DEADLOCK_TIMEOUT_SECONDS=2 (eager) or the
stall settings below (function).

  eager     an eager op waits on its calling thread, which counts as waiting:
            1. rank 0 submits an allreduce no other rank submits, the others
               an allgather rank 0 never submits: every rank raises
               FailedPreconditionError "Deadlock detected" naming both, within
               DEADLINE s; the next op fails at once (the generation ended),
               and hvd.init() brings the ranks back in step.
            2. the same with asynchronous eager execution
               (set_synchronous_execution(False)): rank 0 issues two
               allreduces in one order, the others in the opposite order; TF's
               eager executor runs one op at a time on its own thread, which
               waits in the kernel: the deadlock error again, on every rank.
            3. rank 0 in an eager barrier() while the others wait in an eager
               allreduce: the barrier waits on its thread too, so the
               deadlock error on every rank (join likewise counts).
            4. a rank that computes (not waiting in Horovod) for 3x the
               timeout while the others wait in an eager allreduce: no error,
               exact result.
  function  inside a tf.function the kernels stay asynchronous (graph mode
            must not block TF's inter-op threads), so no rank is blocked in
            Horovod: the Python thread waits inside TensorFlow. The deadlock
            detection therefore never fires (the limit, whatever the
            timeout); with HOROVOD_STALL_SHUTDOWN_TIME_SECONDS set the stall
            inspector fails the lone collective on every rank instead:
            1. the lone collective of eager step 1 inside tf.function;
            2. rank 0 in an eager allreduce (blocked, counted as waiting), the
               others in a tf.function one: not every rank is blocked, so the
               stall inspector again, not the deadlock detection.
            After each, shutdown() + init() start a new generation that works.
Each rank prints "TF-DEADLOCK-OK <mode> rank <r>" at the end and, for eager,
"DEADLOCK-WAITS rank <r>: <seconds>..." (how long each deadlock took).
"""
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
MODE = sys.argv[1]
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import horovod.tensorflow as hvd  # noqa: E402

DEADLINE = 15.0  # seconds from a deadlock's start to the error, on every rank
hvd.init()
R, N = hvd.rank(), hvd.size()
assert N >= 2, "deadlock.py needs at least 2 ranks"


def fail(msg):
    raise AssertionError(f"[rank {R}] {msg}")


def expect_error(fn, kinds, contains=(), any_of=(), absent=(), what=""):
    """Calls fn(); it must raise one of `kinds` (tf.errors classes) within
    DEADLINE, whose message has every string of `contains`, some string of
    `any_of` (when given) and none of `absent`. Returns the seconds it took."""
    t0 = time.monotonic()
    try:
        fn()
    except tf.errors.OpError as e:
        waited = time.monotonic() - t0
        msg = str(e)
        print(f"RAISED rank {R} {what}: {type(e).__name__} after {waited:.1f} s", flush=True)
        if not isinstance(e, kinds):
            fail(f"{what}: expected {[k.__name__ for k in kinds]}, got {type(e).__name__}: {msg}")
        for c in contains:
            if c not in msg:
                fail(f"{what}: the error lacks {c!r}: {msg}")
        if any_of and not any(c in msg for c in any_of):
            fail(f"{what}: the error names none of {any_of}: {msg}")
        for a in absent:
            if a in msg:
                fail(f"{what}: the error mentions {a!r}: {msg}")
        if waited > DEADLINE:
            fail(f"{what}: the error came after {waited:.1f} s (deadline {DEADLINE} s)")
        return waited
    fail(f"{what}: no error")


def healthy(tag, function=False):
    """A Sum allreduce of rank + 1 on every rank (eager, or in a tf.function)."""
    def body(x):
        return hvd.allreduce(x, op=hvd.Sum, name=f"healthy_{tag}")
    fn = tf.function(body) if function else body
    out = fn(tf.fill([3], float(R + 1))).numpy()
    if not np.array_equal(out, np.full(3, N * (N + 1) / 2, np.float32)):
        fail(f"allreduce after {tag}: {out}")


def realign(tag, ended_by):
    """The ended generation fails the next op at once; hvd.init() starts the
    next one, in which every rank is in step again."""
    expect_error(lambda: hvd.allreduce(tf.ones([2]), name=f"late_{tag}").numpy(),
                 (tf.errors.AbortedError,), ended_by, what=f"allreduce after {tag}")
    hvd.init()
    healthy(tag)


def restart(tag):
    """After the stall inspector's shutdown: a rank's stalled op may fail with
    the stall error before the generation's end began, and then init() alone
    is a no-op until an op reports the end (NOTE [Told of the end] in
    csrc/common/generation_end.h); shutdown() + init() starts the next
    generation either way."""
    hvd.shutdown()
    hvd.init()
    healthy(tag, function=True)


DEADLOCK = ("Deadlock detected",)
AFTER_DEADLOCK = ("ended after a detected deadlock",)
STALL = ("stalled for", "stall inspector")


def lone_collective():
    """Rank 0: an allreduce only it submits; the others: an allgather rank 0
    never submits."""
    if R == 0:
        return hvd.allreduce(tf.ones([4]), op=hvd.Sum, name="lonely")
    return hvd.allgather(tf.ones([2, 3]), name="others")


if MODE == "eager":
    waits = []
    # 1. The lone collective, eager: the error lists every rank's pending op.
    pending = ["rank 0: 'lonely'"] + [f"rank {r}: 'others'" for r in range(1, N)]
    waits.append(expect_error(lambda: lone_collective().numpy(),
                              (tf.errors.FailedPreconditionError,), DEADLOCK + tuple(pending),
                              what="lone eager collective"))
    realign("eager", AFTER_DEADLOCK)
    # 2. Asynchronous eager execution: opposite orders.
    tf.config.experimental.set_synchronous_execution(False)
    names = ["first", "second"] if R == 0 else ["second", "first"]

    def opposite_orders():
        outs = [hvd.allreduce(tf.ones([4]), op=hvd.Sum, name=n) for n in names]
        for o in outs:
            o.numpy()
    waits.append(expect_error(opposite_orders, (tf.errors.FailedPreconditionError,), DEADLOCK,
                              what="async eager, opposite orders"))
    tf.experimental.async_clear_error()
    tf.config.experimental.set_synchronous_execution(True)
    realign("async_eager", AFTER_DEADLOCK)
    # 3. Rank 0 in an eager barrier, the others in an eager allreduce: the
    # barrier waits on its thread too (core C API 1.2 enqueue_barrier_wait).
    def barrier_vs_allreduce():
        if R == 0:
            hvd.barrier()
        else:
            hvd.allreduce(tf.ones([4]), op=hvd.Sum, name="not_a_barrier").numpy()
    waits.append(expect_error(barrier_vs_allreduce, (tf.errors.FailedPreconditionError,),
                              DEADLOCK, what="eager barrier against an eager allreduce"))
    realign("barrier", AFTER_DEADLOCK)
    # 4. A slow rank is not a deadlock.
    timeout = float(os.environ.get("HOROVOD_DEADLOCK_TIMEOUT_SECONDS", "5"))
    t0 = time.monotonic()
    if R == 0:
        x = tf.random.normal([64, 64])
        while time.monotonic() - t0 < 3 * timeout:
            x = tf.tanh(x @ x)  # computing, never waiting in Horovod
            time.sleep(0.05)
    out = hvd.allreduce(tf.ones([5]), op=hvd.Sum, name="late").numpy()
    if not np.array_equal(out, np.full(5, float(N), np.float32)):
        fail(f"allreduce with a slow rank: {out}")
    if R != 0 and time.monotonic() - t0 < 3 * timeout - 1:
        fail("the slow rank was not slow")
    print(f"DEADLOCK-WAITS rank {R}: " + " ".join(f"{w:.2f}" for w in waits), flush=True)
elif MODE == "function":
    # 1. The lone collective inside a tf.function.
    expect_error(lambda: tf.function(lone_collective)().numpy(),
                 (tf.errors.FailedPreconditionError, tf.errors.AbortedError), any_of=STALL,
                 absent=DEADLOCK, what="lone collective in a tf.function")
    restart("function")
    # 2. Rank 0 eager (waiting), the others in a tf.function (not waiting).
    fn = lone_collective if R == 0 else tf.function(lone_collective)
    expect_error(lambda: fn().numpy(), (tf.errors.FailedPreconditionError, tf.errors.AbortedError),
                 any_of=STALL, absent=DEADLOCK, what="eager rank 0, tf.function elsewhere")
    restart("mixed")
else:
    sys.exit(f"unknown mode {MODE}")

hvd.shutdown()
print(f"TF-DEADLOCK-OK {MODE} rank {R}", flush=True)
