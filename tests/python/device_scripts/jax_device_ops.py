"""Horovod's collectives inside jax.jit on accelerator arrays (JAX's CUDA
platform), through the CUDA device plugin: XLA's device buffers and stream go
to the core (csrc/jax/collective_handler.cc, hvda_jax_collective_cuda), with
no host staging. Run by test_accel_device.py on GPU machines:
    horovodrun -np N python jax_device_ops.py
Every rank prints PASS/FAIL lines and 'RESULT OK' when all passed."""
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave memory to NCCL

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import horovod.jax as hvd  # noqa: E402
from device_checks import check, finish  # noqa: E402

ops = hvd  # the public ops, on traced values (they dispatch to xla_ops.py)
hvd.init()
RANK, SIZE = hvd.rank(), hvd.size()
GPUS = jax.devices("gpu")
DEV = GPUS[hvd.local_rank() % len(GPUS)]


def on_device(a):
    return jax.device_put(jnp.asarray(a), DEV)


def same(got, want, tol=0.0):
    assert DEV in got.devices(), f"result on {got.devices()}, expected {DEV}"
    g = np.asarray(got, np.float64)
    assert g.shape == np.shape(want) and np.allclose(g, want, atol=tol, rtol=0), \
        f"got {g.tolist()}, want {np.asarray(want).tolist()}"


@check
def allreduce_ops_dtypes_and_scales():
    base = np.arange(10)
    want = sum(base + r for r in range(SIZE)).astype(np.float64)
    f = jax.jit(lambda x: (ops.allreduce(x, op=hvd.Sum), ops.allreduce(x, op=hvd.Average),
                           ops.allreduce(x, op=hvd.Sum, prescale_factor=0.5,
                                         postscale_factor=4.0)))
    for dtype, tol in [(jnp.float32, 1e-5), (jnp.float16, 1e-2), (jnp.bfloat16, 0.3)]:
        s, a, sc = f(on_device((base + RANK).astype(np.float32)).astype(dtype))
        same(s, want, tol * 10)
        same(a, want / SIZE, tol * 10)
        same(sc, want * 2, tol * 10)
    m = jax.jit(lambda x: ops.allreduce(x, op=hvd.Max))(on_device(np.full(7, RANK + 1, np.int32)))
    same(m, np.full(7, SIZE))


@check
def grouped_broadcast_reducescatter():
    xs = [on_device(np.full((3,), RANK + 1.0, np.float32)),
          on_device(np.full((2, 2), RANK + 2.0, np.float32))]
    outs = jax.jit(lambda xs: ops.grouped_allreduce(xs, op=hvd.Sum))(xs)
    same(outs[0], np.full(3, SIZE * (SIZE + 1) / 2))
    same(outs[1], np.full((2, 2), SIZE * (SIZE + 3) / 2))
    bcast = jax.jit(lambda x: ops.broadcast(x, root_rank=SIZE - 1))
    b = bcast(on_device(np.full(5, RANK, np.float32)))
    same(b, np.full(5, SIZE - 1))
    rows = 2 * SIZE + 1
    x = on_device(np.arange(rows * 2, dtype=np.float32).reshape(rows, 2) + RANK)
    total = sum(np.arange(rows * 2).reshape(rows, 2) + r for r in range(SIZE))
    start = sum(rows // SIZE + (1 if q < rows % SIZE else 0) for q in range(RANK))
    mine = rows // SIZE + (1 if RANK < rows % SIZE else 0)
    same(jax.jit(lambda x: ops.reducescatter(x, op=hvd.Sum))(x), total[start:start + mine])


@check
def gradient_and_train_step():
    x = on_device(np.arange(6, dtype=np.float32) + RANK)
    g = jax.jit(jax.grad(lambda v: jnp.sum(ops.allreduce(v, op=hvd.Average) ** 2)))(x)
    avg = np.mean([np.arange(6) + r for r in range(SIZE)], axis=0)
    same(g, 2 * avg, 1e-5)
    # A data-parallel SGD step: every rank ends with the parameters of the
    # step on the averaged gradient.
    key = jax.random.PRNGKey(0)
    w = jax.device_put(jax.random.normal(key, (64, 8)), DEV)
    data = [np.random.RandomState(r).randn(32, 64).astype(np.float32) for r in range(SIZE)]

    def loss(w, xb):
        return jnp.mean(jnp.tanh(xb @ w) ** 2)

    @jax.jit
    def step(w, xb):
        grad = ops.grouped_allreduce([jax.grad(loss)(w, xb)], op=hvd.Average)[0]
        return w - 0.1 * grad

    new_w = step(w, on_device(data[RANK]))
    grads = [jax.grad(loss)(w, on_device(d)) for d in data]
    same(new_w, np.asarray(w - 0.1 * sum(grads) / SIZE), 1e-5)


@check
def distributed_optimizer_step_on_device():
    """hvd.DistributedOptimizer(optax.adam) inside jit on GPU parameters: the
    gradient buckets are grouped allreduces on the device; every rank ends
    with the single-process step on the averaged gradient."""
    import optax  # noqa: PLC0415

    params = {"w": on_device(np.linspace(-1, 1, 48, dtype=np.float32).reshape(6, 8)),
              "b": on_device(np.zeros(8, np.float32))}
    data = [np.random.RandomState(10 + r).randn(16, 6).astype(np.float32) for r in range(SIZE)]

    def loss(p, xb):
        return jnp.mean(jnp.tanh(xb @ p["w"] + p["b"]) ** 2)

    opt = hvd.DistributedOptimizer(optax.adam(0.01))
    state = opt.init(params)

    @jax.jit
    def step(p, s, xb):
        updates, s = opt.update(jax.grad(loss)(p, xb), s, p)
        return optax.apply_updates(p, updates), s

    new, _ = step(params, state, on_device(data[RANK]))
    ref_opt = optax.adam(0.01)
    grads = [jax.grad(loss)(params, on_device(d)) for d in data]
    avg = jax.tree_util.tree_map(lambda *g: sum(g) / SIZE, *grads)
    updates, _ = ref_opt.update(avg, ref_opt.init(params), params)
    want = optax.apply_updates(params, updates)
    for k in ("w", "b"):
        same(new[k], np.asarray(want[k]), 1e-5)


@check
def allgather_inside_jit_is_refused_with_the_reason():
    try:
        jax.jit(ops.allgather)(on_device(np.ones(4, np.float32))).block_until_ready()
    except NotImplementedError as e:
        assert "CPU arrays only" in str(e), e
    else:
        raise AssertionError("allgather inside jit on a GPU array must be refused for now")


hvd.shutdown()
finish()
