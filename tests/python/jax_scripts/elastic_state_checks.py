"""horovod.jax.elastic under a static horovodrun job (every rank runs this):
    horovodrun -np 2 python tests/python/jax_scripts/elastic_state_checks.py
JaxState/ObjectState commit, restore and sync (rank 0's values everywhere,
copies that later changes cannot reach, a donated commit named in the
error); hvd.elastic.run translating a Horovod collective's failure inside
jax.jit (a JaxRuntimeError naming horovod_accel) into HorovodInternalError,
re-raised outside an elastic job, while a user's own JaxRuntimeError
propagates unchanged; a HostsUpdatedInterrupt on every rank: reset
(shutdown(); init()), callbacks, rank 0's state, the jitted step traced anew.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "job_lib"))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from jax.experimental import io_callback  # noqa: E402

import horovod.jax as hvd  # noqa: E402
from check_harness import check, equal, main, raises  # noqa: E402
from horovod_accel.common.exceptions import HorovodInternalError, HostsUpdatedInterrupt  # noqa: E402


def make_params(seed):
    rng = np.random.default_rng(seed)
    return {"w": jnp.asarray(rng.normal(size=(3, 2)), jnp.float32),
            "b": jnp.asarray(rng.normal(size=2), jnp.float32)}


def flat(tree):
    return np.concatenate([np.asarray(leaf, np.float64).ravel()
                           for leaf in jax.tree_util.tree_leaves(tree)])


def same_everywhere(value, what):
    values = hvd.allgather_object(value)
    if any(v != values[0] for v in values):
        raise AssertionError(f"{what} differs across ranks: {values}")


def trees_equal(a, b, what):
    equal(flat(a), flat(b), what)


@check
def jax_state_sync_commit_restore():
    opt = optax.adam(0.1)
    params = make_params(hvd.rank())          # different on every rank
    buf = np.full(3, float(hvd.rank()))
    state = hvd.elastic.JaxState(params, opt.init(params), epoch=hvd.rank(), buf=buf,
                                 note={"rank": hvd.rank()})
    if state.params is not params or state.epoch != hvd.rank():
        raise AssertionError("attributes are the given values")
    state.sync()
    same_everywhere(flat(state.params).tolist(), "params after sync")
    same_everywhere(flat(state.opt_state).tolist(), "opt_state after sync")
    trees_equal(state.params, make_params(0), "params are rank 0's")
    equal(state.buf, np.zeros(3), "numpy attribute is rank 0's")
    if (state.epoch, state.note) != (0, {"rank": 0}):
        raise AssertionError(f"objects after sync: {state.epoch}, {state.note}")

    grads = jax.tree_util.tree_map(jnp.ones_like, state.params)
    updates, state.opt_state = opt.update(grads, state.opt_state, state.params)
    state.params = optax.apply_updates(state.params, updates)
    state.epoch = 1
    state.commit()
    committed = flat(state.params)
    # Later changes: new arrays, an in-place numpy write, a mutated dict.
    state.params = jax.tree_util.tree_map(lambda p: p + 5, state.params)
    state.buf[:] = 42.0
    state.note["rank"] = 99
    state.epoch = 2
    state.restore()
    equal(flat(state.params), committed, "params back to the commit")
    equal(state.buf, np.zeros(3), "numpy attribute back to the commit")
    if (state.epoch, state.note) != (1, {"rank": 0}):
        raise AssertionError(f"objects after restore: {state.epoch}, {state.note}")
    state.buf[:] = 7.0                        # the restored copy is not the saved one
    state.restore()
    equal(state.buf, np.zeros(3), "a second restore")
    equal(int(state.opt_state[0].count), 1, "optimizer step count of the commit")


@check
def object_state_sync():
    state = hvd.elastic.ObjectState(epoch=hvd.rank(), tag=f"rank{hvd.rank()}")
    state.sync()
    same_everywhere((state.epoch, state.tag), "ObjectState after sync")
    if state.tag != "rank0":
        raise AssertionError(state.tag)


@check
def donated_commit_is_named_in_the_error():
    state = hvd.elastic.JaxState(make_params(1))
    state.commit()
    step = jax.jit(lambda p: jax.tree_util.tree_map(lambda x: x * 2, p), donate_argnums=0)
    state.params = step(state.params)         # donates the committed arrays
    e = raises(RuntimeError, state.restore, "restore of donated arrays", match="donate")
    if "'params'" not in str(e):
        raise AssertionError(f"the message names the attribute: {e}")


@check
def run_translates_only_horovod_failures():
    if hvd.size() < 2:
        return
    calls = []

    @hvd.elastic.run
    def clash(state):
        calls.append(1)
        # Shapes differ across ranks: the core fails the collective inside XLA.
        f = jax.jit(lambda x: hvd.allreduce(x, op=hvd.Sum, name="elastic.clash"))
        return f(jnp.ones(2 + hvd.rank())).block_until_ready()

    e = raises(HorovodInternalError, lambda: clash(hvd.elastic.ObjectState(x=1)),
               "mismatch inside jit")
    if not isinstance(e.__cause__, jax.errors.JaxRuntimeError) or "horovod_accel:" not in str(e):
        raise AssertionError(f"expected a translated JaxRuntimeError: {e!r} from {e.__cause__!r}")
    equal(len(calls), 1, "not retried outside an elastic job")

    def user_callback(x):
        raise ValueError("the user's own callback failed")

    @hvd.elastic.run
    def user_error(state):
        f = jax.jit(lambda x: io_callback(user_callback, jax.ShapeDtypeStruct((2,), jnp.float32),
                                          x))
        return f(jnp.ones(2)).block_until_ready()

    e = raises(jax.errors.JaxRuntimeError, lambda: user_error(hvd.elastic.ObjectState(x=1)),
               "a user's JaxRuntimeError")
    if hvd.elastic.is_horovod_failure(e) or isinstance(e, HorovodInternalError):
        raise AssertionError(f"a user's error must propagate unchanged: {e!r}")
    # The job goes on.
    equal(hvd.allreduce(jnp.ones(2), op=hvd.Sum, name="after.errors"), np.full(2, hvd.size()),
          "allreduce after the errors")


@check
def run_resets_after_hosts_updated_interrupt():
    opt = hvd.DistributedOptimizer(optax.sgd(0.1), name="elastic.opt")
    params = make_params(10 + hvd.rank())
    state = hvd.elastic.JaxState(params, opt.init(params), batch=0)
    resets, calls = [], []
    state.register_reset_callbacks([lambda: resets.append((hvd.size(), len(calls)))])

    @jax.jit
    def step(params, opt_state, x):
        grads = jax.grad(lambda p: jnp.sum((x @ p["w"] + p["b"]) ** 2))(params)
        updates, opt_state = opt.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    @hvd.elastic.run
    def train(state):
        calls.append(step._cache_size())
        if len(calls) == 2:
            same_everywhere(flat(state.params).tolist(), "params after the reset")
            equal(state.batch, 2, "batch of the commit, rank 0's")
        while state.batch < 4:
            x = jnp.full((2, 3), float(state.batch + hvd.rank()))
            state.params, state.opt_state = step(state.params, state.opt_state, x)
            state.batch += 1
            state.commit()
            if len(calls) == 1 and state.batch == 2:
                if hvd.rank() == 1:           # diverge, uncommitted: the sync must undo it
                    state.params = jax.tree_util.tree_map(lambda p: p + 5, state.params)
                    state.batch = 77
                raise HostsUpdatedInterrupt(skip_sync=False)
        return "finished"

    if train(state) != "finished":
        raise AssertionError("train's return value")
    # The reset dropped the traces of the first job: the step was traced anew.
    if calls[0] != 0 or calls[1] != 0:
        raise AssertionError(f"jit cache sizes at each call: {calls}")
    equal(len(resets), 1, "reset callbacks ran once")
    if resets[0] != (hvd.size(), 1):
        raise AssertionError(resets)
    same_everywhere(flat(state.params).tolist(), "params at the end")


if __name__ == "__main__":
    sys.exit(main(hvd))
