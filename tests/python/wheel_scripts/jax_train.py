"""A 2-rank JAX training job for the installed-wheel tests
(test_wheels_in_container.py): a small regression MLP, each rank on its own
shard, hvd.DistributedOptimizer(optax.sgd) inside a jitted step, so the
gradient allreduce runs as the wheel's XLA custom call (libhvda_jax.so).
Checks that the loss falls and that the ranks end with identical parameters;
prints JAX-WHEEL-JOB-OK with where the FFI library was loaded from."""
import os
import sys

import jax
import jax.numpy as jnp
import optax

import horovod.jax as hvd
from horovod_accel.jax import xla_link

hvd.init()
rank, size = hvd.rank(), hvd.size()
kx, kw, kn = jax.random.split(jax.random.PRNGKey(1234), 3)
x = jax.random.normal(kx, (512, 16))
y = x @ jax.random.normal(kw, (16, 1)) + 0.1 * jax.random.normal(kn, (512, 1))
x, y = x[rank::size], y[rank::size]

k1, k2 = jax.random.split(jax.random.PRNGKey(rank))  # different per rank until the broadcast
params = {"w1": 0.3 * jax.random.normal(k1, (16, 32)), "b1": jnp.zeros(32),
          "w2": 0.3 * jax.random.normal(k2, (32, 1)), "b2": jnp.zeros(1)}
params = hvd.broadcast_parameters(params, root_rank=0)
opt = hvd.DistributedOptimizer(optax.sgd(0.05))
state = opt.init(params)


def loss_fn(p):
    return jnp.mean((jax.nn.relu(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"] - y) ** 2)


@jax.jit
def step(p, s):
    loss, grads = jax.value_and_grad(loss_fn)(p)
    updates, s = opt.update(grads, s, p)
    return optax.apply_updates(p, updates), s, hvd.allreduce(loss, op=hvd.Average, name="loss")


losses = []
for _ in range(60):
    params, state, loss = step(params, state)
    losses.append(float(loss))
if not losses[-1] < 0.2 * losses[0]:
    sys.exit(f"rank {rank}: the loss did not fall: {losses[0]:.4g} -> {losses[-1]:.4g}")
flat = jnp.concatenate([leaf.reshape(-1) for leaf in jax.tree_util.tree_leaves(params)])
every = hvd.allgather(flat[None])
if not bool(jnp.array_equal(every[0], every[-1])):
    sys.exit(f"rank {rank}: the ranks' parameters differ after training")
library = os.path.join(os.path.dirname(xla_link.__file__), "libhvda_jax.so")
print(f"JAX-WHEEL-JOB-OK rank={rank} size={size} first={losses[0]:.4g} last={losses[-1]:.4g} "
      f"library={library}", flush=True)
hvd.shutdown()
