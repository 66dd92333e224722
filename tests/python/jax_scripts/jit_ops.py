"""Horovod's collectives inside jax.jit (and other JAX traces): every op and
dtype, grouped ops, zero-length and odd shapes, gradients, loops, ordering
under rank-dependent delays, donation, vmap, process sets, names, the named
errors of a mismatch, a ragged allgather and a deadlock, and a new job after
shutdown()/init():
    horovodrun -np N python tests/python/jax_scripts/jit_ops.py
Values are small integers f(rank, index), exact in every dtype, so expected
results need no communication."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "job_lib"))
os.environ["HOROVOD_DYNAMIC_PROCESS_SETS"] = "1"     # process_set_inside_jit adds one
os.environ.setdefault("HOROVOD_DEADLOCK_TIMEOUT_SECONDS", "2")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

import horovod.jax as hvd  # noqa: E402
from check_harness import check, close, equal, main, raises  # noqa: E402

ops = hvd  # the public ops, called on traced values (they dispatch to xla_ops.py)
SUM, AVG, MIN, MAX, PROD = hvd.Sum, hvd.Average, hvd.Min, hvd.Max, hvd.Product
FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["int8", "uint8", "int32", "int64"]


def np_dtype(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def values(rank, shape, dtype, salt=0):
    """Integers 1..3 as a function of (rank, index, salt): products stay exact."""
    n = int(np.prod(shape))
    return ((np.arange(n) * 7 + rank * 3 + salt) % 3 + 1).reshape(shape).astype(np_dtype(dtype))


def stack(shape, dtype="float64", salt=0, members=None):
    members = range(hvd.size()) if members is None else members
    return np.stack([values(r, shape, dtype, salt).astype(np.float64) for r in members])


def reduced(op, shape, salt=0, members=None):
    s = stack(shape, salt=salt, members=members)
    return {SUM: s.sum(0), AVG: s.mean(0), MIN: s.min(0), MAX: s.max(0), PROD: s.prod(0)}[op]


def mine(shape, dtype, salt=0):
    return jnp.asarray(values(hvd.rank(), shape, dtype, salt))


def tol(dtype):
    return {"float16": 1e-2, "bfloat16": 5e-2}.get(dtype, 1e-6)


@check
def allreduce_every_op_and_dtype():
    for dtype in FLOATS + INTS:
        op_list = [SUM, MIN, MAX, PROD] + ([AVG] if dtype in FLOATS else [])
        f = jax.jit(lambda x: [ops.allreduce(x, op=op) for op in op_list])
        for shape in [(5,), (3, 4)]:
            x = mine(shape, dtype)
            for op, out in zip(op_list, f(x)):
                if out.dtype != x.dtype or out.shape != shape:
                    raise AssertionError(f"{dtype} op {op}: {out.dtype} {out.shape}")
                close(np.asarray(out, np.float64), reduced(op, shape), f"{dtype} op {op}",
                      tol(dtype))


@check
def allreduce_scale_factors():
    for dtype in ["float32", "float64", "bfloat16"]:
        f = jax.jit(lambda x: ops.allreduce(x, op=SUM, prescale_factor=0.5, postscale_factor=3.0))
        close(np.asarray(f(mine((7,), dtype)), np.float64), reduced(SUM, (7,)) * 1.5,
              f"scaled {dtype}", tol(dtype))
        g = jax.jit(lambda x: ops.allreduce(x, op=AVG, postscale_factor=2.0))
        close(np.asarray(g(mine((7,), dtype)), np.float64), reduced(AVG, (7,)) * 2,
              f"scaled avg {dtype}", tol(dtype))


@check
def grouped_allreduce_mixed_dtypes():
    f = jax.jit(lambda xs: ops.grouped_allreduce(xs, op=SUM))
    xs = [mine((3,), "float32", 1), mine((2, 2), "int32", 2), mine((5,), "bfloat16", 3)]
    for i, out in enumerate(f(xs)):
        close(np.asarray(out, np.float64), reduced(SUM, xs[i].shape, salt=i + 1), f"tensor {i}",
              tol("bfloat16"))
    if ops.grouped_allreduce([], op=SUM) != []:
        raise AssertionError("an empty group returns []")


@check
def allgather_broadcast_alltoall_every_dtype():
    n, r = hvd.size(), hvd.rank()
    for dtype in FLOATS + INTS + ["bool"]:
        shape = (2 * n, 3)
        f = jax.jit(lambda x: (ops.allgather(x), ops.broadcast(x, root_rank=n - 1),
                               ops.alltoall(x)))
        x = jnp.asarray(values(r, shape, "int32").astype(np_dtype(dtype)) if dtype != "bool"
                        else values(r, shape, "int32") > 1)
        gathered, bcast, a2a = f(x)
        every = [values(q, shape, "int32") for q in range(n)]
        as_dtype = (lambda a: a > 1) if dtype == "bool" else (lambda a: a.astype(np_dtype(dtype)))
        equal(np.asarray(gathered), as_dtype(np.concatenate(every)), f"allgather {dtype}")
        equal(np.asarray(bcast), as_dtype(every[n - 1]), f"broadcast {dtype}")
        # alltoall (equal split): block r of every rank, in rank order.
        equal(np.asarray(a2a), as_dtype(np.concatenate([e[2 * r:2 * r + 2] for e in every])),
              f"alltoall {dtype}")


@check
def reducescatter_odd_rows_and_grouped():
    n, r = hvd.size(), hvd.rank()
    for rows in [7, 2 * n]:
        f = jax.jit(lambda x: ops.reducescatter(x, op=SUM))
        total = reduced(SUM, (rows, 2))
        start = sum(rows // n + (1 if q < rows % n else 0) for q in range(r))
        mine_rows = rows // n + (1 if r < rows % n else 0)
        close(f(mine((rows, 2), "float32")), total[start:start + mine_rows], f"rows {rows}")
    g = jax.jit(lambda xs: ops.grouped_reducescatter(xs, op=AVG))
    outs = g([mine((n, 2), "float32", 1), mine((3 * n,), "float64", 2)])
    close(outs[0], reduced(AVG, (n, 2), 1)[r:r + 1], "grouped 0")
    close(outs[1], reduced(AVG, (3 * n,), 2)[3 * r:3 * r + 3], "grouped 1")


@check
def zero_length_and_scalars():
    n = hvd.size()
    f = jax.jit(lambda x, y, s: (ops.allreduce(x, op=SUM), ops.allgather(y),
                                 ops.broadcast(x, root_rank=0), ops.reducescatter(y, op=SUM),
                                 ops.allreduce(s, op=SUM)))
    a, b, c, d, e = f(jnp.zeros((0,), jnp.float32), jnp.zeros((0, 3), jnp.int32),
                      jnp.float32(hvd.rank() + 1))
    if a.shape != (0,) or b.shape != (0, 3) or c.shape != (0,) or d.shape != (0, 3):
        raise AssertionError(f"zero-length shapes: {a.shape} {b.shape} {c.shape} {d.shape}")
    close(e, n * (n + 1) / 2, "scalar allreduce")


@check
def gradients():
    n, r = hvd.size(), hvd.rank()
    x = mine((2 * n,), "float32")
    every = stack((2 * n,))
    # allreduce Average, scaled: d/dx sum(c * allreduce(x)) = allreduce(c) (same op & scale)
    c = jnp.arange(2 * n, dtype=jnp.float32) + r
    cs = np.stack([np.arange(2 * n) + q for q in range(n)])
    for op, pre, post in [(AVG, 1.0, 1.0), (SUM, 2.0, 0.5)]:
        grad = jax.jit(jax.grad(lambda v: jnp.sum(c * ops.allreduce(
            v, op=op, prescale_factor=pre, postscale_factor=post))))(x)
        expect = (cs.mean(0) if op == AVG else cs.sum(0)) * pre * post
        close(grad, expect, f"allreduce grad op {op}")
    # allgather: the averaged output gradient's rows of this rank
    w = jnp.arange(2 * n * n, dtype=jnp.float32)
    grad = jax.jit(jax.grad(lambda v: jnp.sum(w * ops.allgather(v) * (r + 1))))(x)
    wa = np.arange(2 * n * n) * np.mean([q + 1 for q in range(n)])
    close(grad, wa[2 * n * r:2 * n * (r + 1)], "allgather grad")
    # broadcast: averaged gradient on the root, zero elsewhere
    grad = jax.jit(jax.grad(lambda v: jnp.sum(ops.broadcast(v, root_rank=0) * (r + 1))))(x)
    close(grad, np.full(2 * n, np.mean([q + 1 for q in range(n)]) if r == 0 else 0.0),
          "broadcast grad")
    # reducescatter Sum: allgather of the output gradients
    grad = jax.jit(jax.grad(lambda v: jnp.sum(ops.reducescatter(v, op=SUM) * (r + 1))))(x)
    close(grad, np.repeat([q + 1.0 for q in range(n)], 2), "reducescatter grad")
    # alltoall: the gradient goes back the way the rows came
    grad = jax.jit(jax.grad(lambda v: jnp.sum(ops.alltoall(v) * (r + 1))))(x)
    close(grad, np.repeat([q + 1.0 for q in range(n)], 2), "alltoall grad")
    # without jit: jax.grad applies the primitive outside any compiled function
    grad = jax.grad(lambda v: jnp.sum(ops.allreduce(v, op=SUM) * (r + 1)))(x)
    close(grad, np.full(2 * n, n * (n + 1) / 2), "allreduce grad without jit")
    del every
    raises(NotImplementedError, lambda: jax.grad(lambda v: jnp.sum(ops.allreduce(v, op=MAX)))(x),
           "grad of Max", match="op=Sum or op=Average")


@check
def loop_bodies_reuse_names():
    n = hvd.size()

    def body(carry, _):
        return ops.allreduce(carry, op=AVG) + 1.0, ops.allreduce(carry, op=SUM)

    f = jax.jit(lambda x: jax.lax.scan(body, x, None, length=30))
    x = jnp.full((4,), float(hvd.rank()))
    final, sums = f(x)
    start = (n - 1) / 2
    close(final, np.full(4, start + 30), "scan carry")
    close(sums[5], np.full(4, n * (start + 5)), "scan step 5")


@check
def many_independent_collectives_under_delays():
    """Sixteen collectives with no data dependence between them, executed
    repeatedly while ranks arrive at rank-dependent, varying times: the
    ordering token keeps every rank's order the same, so none deadlocks."""
    f = jax.jit(lambda xs: [ops.allreduce(x, op=SUM) if i % 2 else ops.allgather(x)
                            for i, x in enumerate(xs)])
    xs = [mine((3,), "float32", i) for i in range(16)]
    for rep in range(10):
        time.sleep(0.002 * ((hvd.rank() * 7 + rep * 3) % 5))
        outs = jax.block_until_ready(f(xs))
        for i in range(1, 16, 2):
            close(outs[i], reduced(SUM, (3,), i), f"rep {rep} tensor {i}")


@check
def constant_inside_jit_runs_every_call():
    """A collective of a constant (no traced input) is part of the program,
    not run once at trace time: each call sees the other ranks' current
    arguments."""
    f = jax.jit(lambda x: x + ops.allreduce(jnp.ones(2), op=SUM))
    for k in range(3):
        close(f(jnp.full(2, float(k))), np.full(2, hvd.size() + k), f"call {k}")


@check
def donated_input_in_place():
    f = jax.jit(lambda x: ops.allreduce(x, op=SUM), donate_argnums=0)
    for _ in range(3):
        out = f(mine((1000,), "float32"))
        close(out, reduced(SUM, (1000,)), "donated allreduce")


@check
def vmap():
    f = jax.jit(jax.vmap(lambda x: ops.allreduce(x, op=SUM)))
    close(f(mine((3, 4), "float32")), reduced(SUM, (3, 4)), "vmap allreduce")
    raises(NotImplementedError, lambda: jax.vmap(ops.allgather)(mine((3, 4), "float32")),
           "vmap allgather", match="jax.vmap")


@check
def names_are_deterministic():
    def step(x):
        return ops.allreduce(x, op=SUM), ops.allgather(x, name="mine")

    text = jax.jit(step).lower(jnp.zeros((2,))).as_text()
    for name in ("allreduce.jit.jit_step.0", "allgather.mine"):
        if f'name = "{name}"' not in text:
            raise AssertionError(f"{name} not in the lowered program:\n{text}")


@check
def process_set_inside_jit():
    if hvd.size() < 3:
        return
    ps = hvd.add_process_set([0, 1])
    if hvd.rank() in (0, 1):
        f = jax.jit(lambda x: ops.allreduce(x, op=SUM, process_set=ps))
        close(f(mine((4,), "float32")), reduced(SUM, (4,), members=[0, 1]), "set {0,1}")
    hvd.remove_process_set(ps)


@check
def mismatch_gives_the_named_error():
    if hvd.size() < 2:
        return
    f = jax.jit(lambda x: ops.allreduce(x, op=SUM, name="shape_clash"))
    e = raises(jax.errors.JaxRuntimeError,
               lambda: f(jnp.ones((3 + hvd.rank(),))).block_until_ready(), "mismatch",
               match="horovod_accel:")
    if "allreduce.shape_clash" not in str(e) or "FAILED_PRECONDITION" not in str(e):
        raise AssertionError(f"mismatch message: {e}")
    # The job goes on.
    close(jax.jit(lambda x: ops.allreduce(x, op=SUM))(jnp.ones((2,))), np.full(2, hvd.size()),
          "after the mismatch")


@check
def ragged_allgather_inside_jit_says_why():
    if hvd.size() < 2:
        return
    # 2**rank rows: no rank's rows x size equals the total, so every rank
    # sees that its output (sized rows x size at trace time) cannot hold it.
    f = jax.jit(lambda x: ops.allgather(x, name="ragged"))
    raises(jax.errors.JaxRuntimeError,
           lambda: f(jnp.ones((2 ** hvd.rank(), 2))).block_until_ready(), "ragged",
           match="same first dimension")


@check
def deadlock_then_new_job():
    """Every rank blocks in a collective no other rank submits: each gets the
    core's deadlock error (HOROVOD_DEADLOCK_TIMEOUT_SECONDS=2), never a hang;
    then shutdown() + init() start a new job in which the same jitted
    function is traced afresh and runs."""
    g = jax.jit(lambda x: ops.allgather(x))
    close(g(jnp.ones((1,))), np.ones(hvd.size()), "allgather before")
    if hvd.size() >= 2:
        lonely = jax.jit(lambda x: ops.allreduce(x, op=SUM, name=f"lonely{hvd.rank()}"))
        t0 = time.monotonic()
        raises(jax.errors.JaxRuntimeError, lambda: lonely(jnp.ones(2)).block_until_ready(),
               "deadlock", match="Deadlock detected")
        if time.monotonic() - t0 > 30:
            raise AssertionError(f"deadlock reported after {time.monotonic() - t0:.0f} s")
    hvd.shutdown()
    if g._cache_size() != 0:
        raise AssertionError("a new job must drop the traces of the previous one")
    hvd.init()
    close(g(jnp.ones((1,))), np.ones(hvd.size()), "allgather in the new job")


if __name__ == "__main__":
    sys.exit(main(hvd))
