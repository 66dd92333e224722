"""One process of a benchmarks/jax_collectives.py job:
    --peer hvda      under horovodrun (horovod_accel inside jax.jit)
    --peer mpi4jax   under mpirun.openmpi, in .venv-mpi4jax (mpi4jax inside jax.jit)
    --peer mpi4py    under mpirun.openmpi (mpi4py on numpy, outside jit)
    --peer ideal     one of --count independent processes (--index i); train step only

What is timed (every peer by this same code; backends.py holds the libraries):
* allreduce, per size (float32 Sum), twice for in-jit peers: donated
  (jax.jit(allreduce_sum, donate_argnums=0), the output fed back as the next
  input: in place, as the other benchmarks reduce) and out of place (the same
  input every call; XLA allocates a new output each time). Host peers: out of
  place only. The first call compiles and is checked (every element must be
  the sum over ranks of rank+1); then `warmup` more untimed calls, one
  barrier, then `iters` calls, each timed on every rank with perf_counter
  around f(x).block_until_ready(). Per iteration the max over ranks is taken
  (one untimed max-allreduce after the block), then median, p10, p90, min and
  max over iterations.
* chain: `ops` dependent 4 KiB allreduces in one jitted function, timed the
  same way: the cost of each op inside a program beyond the per-call cost.
* train step (mlp.py): one step from the initial parameters is checked against
  the locally computed mean over ranks' gradients; then `warmup` untimed steps,
  one barrier, `iters` steps timed the same way (step(...) then
  block_until_ready on the new parameters). After the loop every rank must
  hold the same parameters (their sum, max and min over ranks, must agree).
  samples/s = size x batch / median (ideal: this process's batch / its own
  median; the driver adds the processes up).

Rank 0 (every ideal process) writes one JSON object to --out, atomically.
"""
import argparse
import json
import os
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mlp  # noqa: E402
from backends import make_backend  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--peer", required=True, choices=["hvda", "mpi4jax", "mpi4py", "ideal"])
    p.add_argument("--config", required=True, help="JSON plan written by the driver")
    p.add_argument("--out", required=True, help="result JSON (rank 0, or this ideal process)")
    p.add_argument("--index", type=int, default=0, help="ideal: this process's number")
    p.add_argument("--count", type=int, default=1, help="ideal: how many processes run")
    return p.parse_args(argv)


def percentile(values, q):
    """Nearest-rank percentile (q in [0, 100]) of a non-empty list."""
    s = sorted(values)
    return s[max(0, min(len(s) - 1, int(round(q / 100.0 * len(s) + 0.5)) - 1))]


def summary(times):
    return {"median_s": statistics.median(times), "p10_s": percentile(times, 10),
            "p90_s": percentile(times, 90), "min_s": min(times), "max_s": max(times)}


def timed_block(backend, call, iters):
    """Barrier, then `iters` calls of call() (which blocks until its result is
    ready); returns the per-iteration max-over-ranks times in seconds."""
    times = [0.0] * iters
    backend.barrier()
    for i in range(iters):
        t0 = time.perf_counter()
        call()
        times[i] = time.perf_counter() - t0
    return backend.max_over_ranks(times)


def measure_allreduce(backend, sizes, donated):
    """Per size: the allreduce's check, then its timed block. donated (in-jit
    peers only): jax.jit(..., donate_argnums=0) and each call's output is the
    next call's input, so XLA can reduce in place (the buffer then holds zeros,
    which a Sum keeps; the check runs on a fresh buffer first). Otherwise the
    same input every call and a new output each time."""
    if backend.in_jit:
        f = jax.jit(backend.allreduce_sum, donate_argnums=0 if donated else ())
    else:
        f = backend.allreduce_sum
    n, want = backend.size, backend.size * (backend.size + 1) / 2.0
    out = {}
    for nbytes, iters, warmup in sizes:
        x = jnp.full((nbytes // 4,), backend.rank + 1.0, jnp.float32)
        t0 = time.perf_counter()
        y = np.asarray(f(x).block_until_ready())
        first_s = time.perf_counter() - t0
        if y.shape != (nbytes // 4,) or y.min() != want or y.max() != want:
            raise RuntimeError(f"{backend.name}: allreduce Sum of {nbytes} B wrong on rank "
                               f"{backend.rank}: values in [{y.min()}, {y.max()}], want {want}")
        state = {"buf": jnp.zeros((nbytes // 4,), jnp.float32) if donated else x}

        def call():
            y = f(state["buf"]).block_until_ready()
            if donated:
                state["buf"] = y

        for _ in range(warmup):
            call()
        times = timed_block(backend, call, iters)
        med = statistics.median(times)
        out[str(nbytes)] = dict(summary(times), bytes=nbytes, iters=iters, warmup=warmup,
                                first_call_s=first_s, donated=donated,
                                busbw_GBps=nbytes * 2.0 * (n - 1) / n / med / 1e9)
    return out


def measure_chain(backend, cc):
    """`ops` dependent allreduces of `bytes` in one call (one jitted function
    for in-jit peers): against the single-op row, the cost of each further op
    inside one program, without the per-call cost."""
    ops = cc["ops"]

    def chain(x):
        for _ in range(ops):
            x = backend.allreduce_sum(x)
        return x

    f = jax.jit(chain) if backend.in_jit else chain
    n = backend.size
    want = n * (n + 1) / 2.0 * n ** (ops - 1)
    x = jnp.full((cc["bytes"] // 4,), backend.rank + 1.0, jnp.float32)
    y = np.asarray(f(x).block_until_ready())
    if y.min() != want or y.max() != want:
        raise RuntimeError(f"{backend.name}: {ops} chained allreduces wrong on rank "
                           f"{backend.rank}: values in [{y.min()}, {y.max()}], want {want}")
    for _ in range(cc["warmup"]):
        f(x).block_until_ready()
    times = timed_block(backend, lambda: f(x).block_until_ready(), cc["iters"])
    return dict(summary(times), **cc)


def check_first_step(backend, step, tc, x, y):
    """One step from the initial parameters must equal the locally computed
    step on the mean of every rank's gradients."""
    got = mlp.init_params(tc["widths"])
    got = jax.tree_util.tree_leaves(step(got, x, y))
    want = jax.tree_util.tree_leaves(
        mlp.expected_first_step(tc["widths"], tc["batch"], backend.size, tc["lr"]))
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        err = float(np.max(np.abs(g - w)))
        if err > 1e-5 * max(1.0, float(np.max(np.abs(w)))):
            raise RuntimeError(f"{backend.name}: first train step wrong on rank {backend.rank}: "
                               f"leaf {i} {g.shape} differs from the mean-gradient step by {err}")


def measure_train(backend, tc):
    x, y = mlp.batch(tc["widths"], tc["batch"], backend.rank)
    step = mlp.make_step(backend, tc["lr"])
    t0 = time.perf_counter()
    if backend.name != "ideal":
        check_first_step(backend, step, tc, x, y)
    params = mlp.init_params(tc["widths"])
    params = jax.block_until_ready(step(params, x, y))
    first_s = time.perf_counter() - t0
    for _ in range(tc["warmup"]):
        params = jax.block_until_ready(step(params, x, y))

    state = {"params": params}

    def one_step():
        state["params"] = jax.block_until_ready(step(state["params"], x, y))

    times = timed_block(backend, one_step, tc["iters"])
    total = float(sum(np.sum(np.asarray(p, np.float64))
                      for p in jax.tree_util.tree_leaves(state["params"])))
    hi, neg_lo = backend.max_over_ranks([total, -total])
    if backend.name != "ideal" and not (hi + neg_lo) <= 1e-6 * max(1.0, abs(hi)):
        raise RuntimeError(f"{backend.name}: ranks hold different parameters after training "
                           f"(sum over parameters: max {hi}, min {-neg_lo} over ranks)")
    med = statistics.median(times)
    ranks = 1 if backend.name == "ideal" else backend.size
    return dict(summary(times), iter_s=times, first_steps_s=first_s, widths=tc["widths"],
                batch=tc["batch"], iters=tc["iters"], warmup=tc["warmup"],
                params=mlp.n_params(tc["widths"]), grad_bytes=4 * mlp.n_params(tc["widths"]),
                grad_leaves=2 * (len(tc["widths"]) - 1), params_sum=total,
                samples_per_s=ranks * tc["batch"] / med)


def main(argv=None):
    a = parse_args(argv)
    with open(a.config) as f:
        cfg = json.load(f)
    backend = make_backend(a.peer, a.index, a.count)
    result = {"peer": a.peer, "api": backend.api, "size": backend.size, "jax": jax.__version__,
              "xla_flags": os.environ.get("XLA_FLAGS", "")}
    if a.peer != "ideal" and cfg.get("sizes"):
        if backend.in_jit:
            result["allreduce_donated"] = measure_allreduce(backend, cfg["sizes"], True)
        result["allreduce"] = measure_allreduce(backend, cfg["sizes"], False)
    if a.peer != "ideal" and cfg.get("chain"):
        result["chain"] = measure_chain(backend, cfg["chain"])
    if cfg.get("train"):
        result["train"] = measure_train(backend, cfg["train"])
    if backend.rank == 0 or a.peer == "ideal":
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(result, f)
        os.replace(tmp, a.out)  # the driver never reads a half-written file
    backend.finish()


if __name__ == "__main__":
    main()
