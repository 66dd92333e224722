"""An elastic JAX worker (JaxState + hvd.elastic.run + a jitted
DistributedOptimizer step) for test_jax_training.py's elastic job.

Env: ELASTIC_DIR, ELASTIC_SCHEDULE (tests/python/elastic_scripts/_schedule.py:
{"epochs": E, "batches": B, "events": [{"epoch", "batch", "rank", "do"}]}).
The state is committed every COMMIT_EVERY batches. The scheduled rank fails
at the start of its batch, once every other rank has marked (a file in
ELASTIC_DIR) that it is entering that batch's jitted step: their step's
allreduce, which waits for the failed rank, fails (a JaxRuntimeError naming
horovod_accel), so hvd.elastic.run restores their last commit (undoing the
uncommitted batches), resets and goes on with the survivors.
Every worker appends JSON lines to ELASTIC_DIR/<worker id>.jsonl:
  {"kind": "enter", "round", "rank", "size", "epoch", "batch", "digest"}  (each call of train)
  {"kind": "step", ... same fields}                                       (after each step)
  {"kind": "commit", ... same fields}                                     (after each commit)
  {"kind": "error", "round", "rank", "type", "message"}                   (a failed step)
Rank 0 prints "DONE size=<n> digests=<distinct digests over ranks>" at the end.
"""
import hashlib
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "elastic_scripts"))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

import horovod.jax as hvd  # noqa: E402
from _schedule import DIR, SCHED, WID, events_at, inject_failures, log  # noqa: E402


COMMIT_EVERY = 2   # batches per commit: a failure loses the uncommitted one


def digest(tree):
    h = hashlib.sha256()
    for leaf in jax.tree_util.tree_leaves(tree):
        h.update(np.asarray(leaf).tobytes())
    return h.hexdigest()[:16]


def batch_data(epoch, batch, rank):
    rng = np.random.default_rng(10000 * epoch + 100 * batch + rank)
    x = rng.normal(size=(8, 4)).astype(np.float32)
    return x, x @ np.array([[1.0], [-2.0], [3.0], [0.5]], np.float32)


def elastic_round():
    return int(os.environ.get("_HOROVOD_ELASTIC_ROUND", "0"))


def record(kind, state):
    log(kind=kind, w=WID, round=elastic_round(),
        rank=hvd.rank(), size=hvd.size(), epoch=state.epoch, batch=state.batch,
        digest=digest((state.params, state.opt_state)))


def _marker(epoch, batch, rank):
    return os.path.join(DIR, f"step-{elastic_round()}-{epoch}-{batch}-{rank}")


def mark_step(epoch, batch):
    """This rank is about to run the step of (epoch, batch)."""
    open(_marker(epoch, batch, hvd.rank()), "w").close()


def await_step_markers(epoch, batch):
    """Waits until every other rank of this round is about to run the step."""
    others = [r for r in range(hvd.size()) if r != hvd.rank()]
    deadline = time.time() + 60
    while not all(os.path.exists(_marker(epoch, batch, r)) for r in others):
        if time.time() > deadline:
            raise RuntimeError(f"the other ranks did not reach step {epoch}:{batch}")
        time.sleep(0.02)


def main():
    hvd.init()
    optimizer = hvd.DistributedOptimizer(optax.sgd(0.05, momentum=0.9))
    rng = np.random.default_rng(hvd.rank())        # different on every rank: sync unifies
    params = {"w": jnp.asarray(rng.normal(size=(4, 1)), jnp.float32), "b": jnp.zeros(1)}
    state = hvd.elastic.JaxState(params, optimizer.init(params), epoch=0, batch=0)

    @jax.jit
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean((x @ p["w"] + p["b"] - y) ** 2))(
            params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    @hvd.elastic.run
    def train(state):
        record("enter", state)
        while state.epoch < SCHED["epochs"]:
            while state.batch < SCHED["batches"]:
                here = (state.epoch, state.batch)
                if any(ev.get("rank") == hvd.rank() for _, ev in events_at(*here)):
                    # The others first enter the step, whose allreduce then
                    # waits for this rank: their failure surfaces inside jit.
                    await_step_markers(*here)
                inject_failures(state.epoch, state.batch, hvd.rank())
                mark_step(*here)
                try:
                    state.params, state.opt_state, loss = step(
                        state.params, state.opt_state,
                        *batch_data(state.epoch, state.batch, hvd.rank()))
                    loss.block_until_ready()
                except Exception as e:
                    log(kind="error", w=WID, round=elastic_round(), rank=hvd.rank(),
                        type=type(e).__name__, message=str(e)[:500])
                    raise
                state.batch += 1
                record("step", state)
                if state.batch % COMMIT_EVERY == 0:
                    state.commit()
                    record("commit", state)
            state.epoch += 1
            state.batch = 0
            state.commit()

    train(state)
    digests = hvd.allgather_object(digest((state.params, state.opt_state)))
    if hvd.rank() == 0:
        print(f"DONE size={hvd.size()} digests={sorted(set(digests))}", flush=True)


if __name__ == "__main__":
    main()
