"""The train step of benchmarks/jax_collectives.py: an MLP (ReLU, softmax
cross-entropy) trained by plain SGD on a fixed random batch, in pure JAX (no
flax or optax: the mpi4jax venv has neither).

Every rank starts from the same parameters (one seed) and draws its own batch
(seeded by its rank), so gradients differ between ranks and only an average
over ranks keeps the replicas equal.

make_step(backend, ...) builds the step for a backend (backends.py):
  in-jit backends   one jax.jit: grads -> backend.average_grads -> SGD update,
                    parameters donated (updated in place where XLA can);
  host backends     jit(grads), then average_grads on the host, then jit(update).
The "ideal" backend's average_grads returns the gradients as they are: the
same step without communication.
"""
import jax
import jax.numpy as jnp
import numpy as np


def init_params(widths, seed=0):
    """[(w, b)] for layer sizes widths[0] -> ... -> widths[-1] (He init), the
    same on every rank."""
    keys = jax.random.split(jax.random.PRNGKey(seed), len(widths) - 1)
    params = []
    for k, (fan_in, fan_out) in zip(keys, zip(widths[:-1], widths[1:])):
        w = jax.random.normal(k, (fan_in, fan_out), jnp.float32) * np.sqrt(2.0 / fan_in)
        params.append((w, jnp.zeros((fan_out,), jnp.float32)))
    return params


def batch(widths, batch_size, rank):
    """This rank's fixed batch: inputs (batch, widths[0]) and integer labels."""
    kx, ky = jax.random.split(jax.random.PRNGKey(1000 + rank))
    x = jax.random.normal(kx, (batch_size, widths[0]), jnp.float32)
    y = jax.random.randint(ky, (batch_size,), 0, widths[-1])
    return x, y


def loss_fn(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = jax.nn.relu(h @ w + b)
    w, b = params[-1]
    logits = h @ w + b
    logp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))


def _sgd(params, grads, lr):
    return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)


def _averaged(backend, grads):
    leaves, tree = jax.tree_util.tree_flatten(grads)
    return jax.tree_util.tree_unflatten(tree, backend.average_grads(leaves))


def make_step(backend, lr):
    """step(params, x, y) -> new params; the caller blocks on the result."""
    grad_fn = jax.grad(loss_fn)
    if backend.in_jit:
        def step(params, x, y):
            return _sgd(params, _averaged(backend, grad_fn(params, x, y)), lr)
        return jax.jit(step, donate_argnums=0)
    jit_grads = jax.jit(grad_fn)
    jit_update = jax.jit(lambda p, g: _sgd(p, g, lr), donate_argnums=0)

    def host_step(params, x, y):
        return jit_update(params, _averaged(backend, jit_grads(params, x, y)))
    return host_step


def expected_first_step(widths, batch_size, size, lr):
    """The parameters after one step from init_params on every rank's batch,
    computed locally (the mean over ranks of each rank's gradients): what any
    correct averaging must give, to float32 rounding."""
    params = init_params(widths)
    grad_fn = jax.jit(jax.grad(loss_fn))
    total = None
    for r in range(size):
        g = grad_fn(params, *batch(widths, batch_size, r))
        total = g if total is None else jax.tree_util.tree_map(jnp.add, total, g)
    return _sgd(params, jax.tree_util.tree_map(lambda t: t / size, total), lr)


def n_params(widths):
    return sum(a * b + b for a, b in zip(widths[:-1], widths[1:]))
