"""hvd.DistributedOptimizer and hvd.allreduce_gradients (horovod.jax) against
single-process optax, at any np:
    horovodrun -np N python tests/python/jax_scripts/train_optimizer.py
Every rank's batch is a function of (rank, step), so each rank computes the
reference locally: the wrapped optax transformation applied, in one
process, to the gradients of every rank's batch combined as the op says
(mean, sum, fp16-rounded mean, the sum over accumulated passes, ...).
The distributed step runs inside jax.jit unless a check says eager."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "job_lib"))
os.environ["HOROVOD_DYNAMIC_PROCESS_SETS"] = "1"     # process_set_subset adds one

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

import horovod.jax as hvd  # noqa: E402
from check_harness import check, close, equal, main, raises  # noqa: E402
from horovod_accel.common import buckets  # noqa: E402


def init_params():
    """The same small model on every rank."""
    rng = np.random.default_rng(7)
    return {"hidden": {"w": jnp.asarray(rng.normal(size=(4, 5)), jnp.float32),
                       "b": jnp.zeros(5, jnp.float32)},
            "out": {"w": jnp.asarray(rng.normal(size=(5, 2)), jnp.float32)},
            "scale": jnp.asarray(1.5, jnp.float32)}


def batch(rank, step):
    rng = np.random.default_rng(1000 * rank + step)
    return (jnp.asarray(rng.normal(size=(6, 4)), jnp.float32),
            jnp.asarray(rng.normal(size=(6, 2)), jnp.float32))


def loss_fn(params, x, y):
    h = jnp.tanh(x @ params["hidden"]["w"] + params["hidden"]["b"])
    return jnp.mean((params["scale"] * h @ params["out"]["w"] - y) ** 2)


grad_fn = jax.grad(loss_fn)


def rank_grads(params, step, members=None):
    """Every member's gradient at `params` for its batch of `step` (local)."""
    members = range(hvd.size()) if members is None else members
    return [grad_fn(params, *batch(r, step)) for r in members]


def combine(grads, how=np.mean, wire=None):
    """The leaves of a list of gradient trees combined in float64 (each leaf
    first rounded to the `wire` dtype, as compression sends it)."""
    def leaf(*gs):
        gs = [np.asarray(g.astype(wire) if wire else g, np.float64) for g in gs]
        return jnp.asarray(how(np.stack(gs), axis=0), jnp.float32)
    return jax.tree_util.tree_map(leaf, *grads)


def make_step(optimizer, jit=True):
    def step(params, state, x, y):
        grads = grad_fn(params, x, y)
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state
    return jax.jit(step) if jit else step


def reference_step(inner, params, state, grads):
    updates, state = inner.update(grads, state, params)
    return optax.apply_updates(params, updates), state


def assert_trees_close(actual, expected, what, tol=1e-5):
    for (path, a), e in zip(jax.tree_util.tree_leaves_with_path(actual),
                            jax.tree_util.tree_leaves(expected)):
        close(a, e, f"{what} {jax.tree_util.keystr(path)}", tol)


def assert_trees_equal(actual, expected, what):
    for (path, a), e in zip(jax.tree_util.tree_leaves_with_path(actual),
                            jax.tree_util.tree_leaves(expected)):
        equal(a, e, f"{what} {jax.tree_util.keystr(path)}")


def run_against_reference(make_inner, steps=3, jit=True, wire=None, tol=1e-5, **kwargs):
    """`steps` distributed steps vs the single-process reference on the
    rank-averaged gradient (fp-rounded to `wire` when compressed)."""
    params = ref = init_params()
    opt = hvd.DistributedOptimizer(make_inner(), **kwargs)
    inner = make_inner()
    state, ref_state = opt.init(params), inner.init(ref)
    step = make_step(opt, jit)
    for i in range(steps):
        ref, ref_state = reference_step(inner, ref, ref_state,
                                        combine(rank_grads(ref, i), wire=wire))
        params, state = step(params, state, *batch(hvd.rank(), i))
        assert_trees_close(params, ref, f"step {i}", tol)
    return params


def collective_lines(optimizer, params):
    """The custom calls of the jitted step's program (StableHLO text)."""
    text = make_step(optimizer).lower(params, optimizer.init(params),
                                      *batch(hvd.rank(), 0)).as_text()
    return [line for line in text.splitlines() if "@hvda_collective" in line]


def collective_names(lines):
    return [re.search(r'name = "([^"]+)"', line).group(1) for line in lines]


@check
def jitted_step_equals_single_process_step():
    run_against_reference(lambda: optax.sgd(0.1, momentum=0.9))


@check
def eager_step_equals_single_process_step():
    run_against_reference(lambda: optax.adam(0.01), jit=False)


@check
def fp16_and_bf16_compression():
    for compression, wire, tol in [(hvd.Compression.fp16, jnp.float16, 2e-3),
                                   (hvd.Compression.bf16, jnp.bfloat16, 2e-2)]:
        opt = hvd.DistributedOptimizer(optax.sgd(0.1), compression=compression)
        lines = collective_lines(opt, init_params())
        wire_name = {jnp.float16: "f16", jnp.bfloat16: "bf16"}[wire]
        if hvd.size() > 1 and not all(f"x{wire_name}>" in line for line in lines):
            raise AssertionError(f"{compression.__name__}: collectives not in {wire_name}: {lines}")
        run_against_reference(lambda: optax.sgd(0.1), wire=wire, tol=tol,
                              compression=compression)
        # The reduced gradients come back in their own dtype, from grouped
        # and (buckets of one leaf) plain allreduces alike.
        grads = rank_grads(init_params(), 5)
        saved = buckets.DEFAULT_BUCKET_BYTES
        try:
            for bucket_bytes in (saved, 24):
                buckets.DEFAULT_BUCKET_BYTES = bucket_bytes
                out = jax.jit(lambda g: hvd.allreduce_gradients(
                    g, compression=compression, name="grads.compressed"))(grads[hvd.rank()])
                if any(leaf.dtype != jnp.float32 for leaf in jax.tree_util.tree_leaves(out)):
                    raise AssertionError(f"{compression.__name__}: dtypes {out}")
                assert_trees_close(out, combine(grads, wire=wire), "compressed", tol)
        finally:
            buckets.DEFAULT_BUCKET_BYTES = saved


@check
def backward_passes_per_step_accumulates():
    """k=2: odd calls leave params exactly unchanged; every 2nd applies the
    rank-average of the two passes' summed (or, averaged) gradients."""
    for jit, average in [(True, False), (False, True)]:
        inner = optax.sgd(0.1, momentum=0.9)
        opt = hvd.DistributedOptimizer(optax.sgd(0.1, momentum=0.9), backward_passes_per_step=2,
                                       average_aggregated_gradients=average)
        params = ref = init_params()
        state, ref_state = opt.init(params), inner.init(ref)
        step = make_step(opt, jit)
        for i in range(4):
            before = params
            params, state = step(params, state, *batch(hvd.rank(), i))
            if i % 2 == 0:
                assert_trees_equal(params, before, f"jit={jit} pass {i} (no update)")
                continue
            acc = [jax.tree_util.tree_map(jnp.add, g0, g1) for g0, g1 in
                   zip(rank_grads(ref, i - 1), rank_grads(ref, i))]
            if average:
                acc = [jax.tree_util.tree_map(lambda g: g / 2, g) for g in acc]
            ref, ref_state = reference_step(inner, ref, ref_state, combine(acc))
            assert_trees_close(params, ref, f"jit={jit} pass {i}")
        equal(state.mini_step, 0, "mini_step after an even number of passes")


@check
def sum_op_and_predivide_factor():
    params = init_params()
    grads = rank_grads(params, 0)
    mine = grads[hvd.rank()]
    total = hvd.allreduce_gradients(mine, op=hvd.Sum, name="grads.sum")
    assert_trees_close(total, combine(grads, np.sum), "op=Sum")
    jitted = jax.jit(lambda g: hvd.allreduce_gradients(g, gradient_predivide_factor=4.0,
                                                       name="grads.predivide"))
    assert_trees_close(jitted(mine), combine(grads), "Average with gradient_predivide_factor 4")
    if hvd.size() > 1:
        line = collective_lines(hvd.DistributedOptimizer(optax.sgd(0.1),
                                                         gradient_predivide_factor=4.0),
                                params)[0]
        if "prescale = 2.500000e-01" not in line or "postscale = 4.000000e+00" not in line:
            raise AssertionError(f"predivide 4: expected prescale 1/4, postscale 4: {line}")


@check
def names_identical_on_every_rank_and_buckets_by_size():
    params = init_params()
    default = collective_names(collective_lines(hvd.DistributedOptimizer(optax.sgd(0.1)),
                                                params))
    saved = buckets.DEFAULT_BUCKET_BYTES
    buckets.DEFAULT_BUCKET_BYTES = 24     # 6 floats: every leaf but the scalar alone
    try:
        named = hvd.DistributedOptimizer(optax.sgd(0.1), name="small")
        small = collective_names(collective_lines(named, params))
        run_against_reference(lambda: optax.sgd(0.1), steps=2, name="small")
    finally:
        buckets.DEFAULT_BUCKET_BYTES = saved
    everyone = hvd.allgather_object((default, small))
    if any(v != everyone[0] for v in everyone):
        raise AssertionError(f"collective names differ across ranks: {everyone}")
    if hvd.size() == 1:
        equal(len(default) + len(small), 0, "collectives at size 1")
        return
    equal(len(default), 1, "automatic buckets of a small model")
    if not default[0].startswith("grouped_allreduce.DistributedOptimizer."):
        raise AssertionError(default)
    if len(small) < 3 or len(set(small)) != len(small) or not all(
            re.fullmatch(r"(grouped_)?allreduce\.small\.\d+", n) for n in small):
        raise AssertionError(f"small buckets: {small}")


@check
def process_set_subset():
    """Members of a 2-rank set average among themselves; others keep theirs."""
    members = [0, 1] if hvd.size() > 1 else [0]
    ps = hvd.add_process_set(members)
    try:
        params = init_params()
        mine = rank_grads(params, 3)[hvd.rank()]
        for jit in (False, True):
            fn = lambda g: hvd.allreduce_gradients(g, process_set=ps, name="grads.subset")  # noqa: E731
            out = (jax.jit(fn) if jit else fn)(mine)
            if hvd.rank() in members:
                expected = combine(rank_grads(params, 3, members))
            else:
                expected = mine
            assert_trees_close(out, expected, f"process set {members} jit={jit}")
    finally:
        hvd.remove_process_set(ps)


@check
def argument_errors():
    sgd = optax.sgd(0.1)
    raises(ValueError, lambda: hvd.DistributedOptimizer(sgd, op=hvd.Sum,
                                                        gradient_predivide_factor=2.0),
           "predivide with Sum", match="gradient_predivide_factor not supported")
    raises(ValueError, lambda: hvd.DistributedOptimizer(sgd, backward_passes_per_step=0),
           "zero passes", match="backward_passes_per_step must be a positive integer")
    raises(ValueError, lambda: hvd.DistributedOptimizer(sgd, op=hvd.Adasum,
                                                        backward_passes_per_step=2,
                                                        average_aggregated_gradients=True),
           "Adasum averaging", match="Adasum does not support average_aggregated_gradients")
    raises(TypeError, lambda: hvd.DistributedOptimizer(lambda g: g), "not optax",
           match="needs an optax GradientTransformation")
    raises(ValueError, lambda: hvd.DistributedOptimizer(sgd, groups=[[init_params()["scale"]]]),
           "groups list", match="groups must be None")
    raises(TypeError, lambda: hvd.DistributedOptimizer(sgd, compression="fp16"),
           "compression string", match="compression must be a Compressor")
    opt = hvd.DistributedOptimizer(sgd, backward_passes_per_step=2)
    params = init_params()
    raises(TypeError, lambda: opt.update(params, sgd.init(params), params), "foreign state",
           match="needs the state its init() returned")


if __name__ == "__main__":
    sys.exit(main(hvd))
