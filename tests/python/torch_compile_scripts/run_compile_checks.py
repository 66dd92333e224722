"""DistributedOptimizer, broadcast_parameters and broadcast_optimizer_state
with torch.compile'd models; every rank runs the checks in order:

    horovodrun -np N python tests/python/torch_compile_scripts/run_compile_checks.py aot_eager
    horovodrun -np 2 python tests/python/torch_compile_scripts/run_compile_checks.py inductor

The first group compiles with aot_eager (no code generation, fast), the
second (checks named inductor_*) with inductor. Prints 'PASS <check>' per
check (rank-prefixed by horovodrun); exits non-zero at the first failure.
"""
import os
import sys
import warnings
from contextlib import contextmanager

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch._dynamo  # noqa: E402

import horovod.torch as hvd  # noqa: E402
from compile_common import (STEPS, TOLERANCES, CountingBackend, adam,  # noqa: E402
                            assert_compiled_once, bf16_autocast_step, data, plain_step, sgd,
                            train)
from horovod_accel.common import buckets as optimizer_buckets  # noqa: E402
from train_common import (CHECKS, assert_equal_across_ranks, assert_same_params, check,  # noqa: E402
                          mlp, run_all)


@contextmanager
def no_warnings(what):
    """Nothing (torch, Dynamo or DistributedOptimizer) warns inside, but for
    deprecations (inductor's imports deprecate torch.jit APIs)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    caught = [w for w in caught if not issubclass(w.category, (DeprecationWarning, FutureWarning))]
    assert not caught, f"{what} warned: {[str(w.message)[:300] for w in caught]}"


def compare(compiled_step=plain_step, make_opt=sgd, backend="aot_eager", tol_key=None, what=""):
    """Trains compiled and eager; same parameters within tolerance, identical
    across ranks, compiled once, no warning."""
    with no_warnings(what):
        compiled, _, counter = train(True, compiled_step, make_opt, backend)
    eager, _, _ = train(False, compiled_step, make_opt, backend)
    assert_same_params(compiled, eager, TOLERANCES[tol_key or backend], f"{what} vs eager")
    assert_equal_across_ranks(list(compiled.parameters()), what)
    assert_compiled_once(counter, what)


@check
def aot_eager_sgd_and_adam_match_eager():
    compare(make_opt=sgd, what="aot_eager SGD")
    compare(make_opt=adam, what="aot_eager Adam")


@check
def autocast_bf16_matches_eager():
    compare(bf16_autocast_step, tol_key="aot_eager+bf16", what="aot_eager bf16 autocast")


class GradScalerLoop:
    """The GradScaler recipe of upstream's docs: scaled backward, explicit
    synchronize(), unscale and inspect the reduced gradients, step inside
    skip_synchronize(). At step `overflow_step` the last rank's loss is
    infinite: after the allreduce every rank sees the non-finite gradients,
    so every rank skips that step and halves the scale."""

    def __init__(self, overflow_step=2):
        self.scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=2)
        self.overflow_step = overflow_step
        self.finite, self.scales = [], []

    def __call__(self, net, opt, x, y, step):
        params = [p for group in opt.param_groups for p in group["params"]]
        opt.zero_grad()
        loss = ((net(x) - y) ** 2).mean()
        if step == self.overflow_step and hvd.rank() == hvd.size() - 1:
            loss = loss * float("inf")
        self.scaler.scale(loss).backward()
        opt.synchronize()
        self.scaler.unscale_(opt)
        finite = all(bool(torch.isfinite(p.grad).all()) for p in params)
        self.finite.append(finite)
        if finite:
            torch.nn.utils.clip_grad_norm_(params, max_norm=1.0)
        before = [p.detach().clone() for p in params]
        with opt.skip_synchronize():
            self.scaler.step(opt)
        self.scaler.update()
        self.scales.append(self.scaler.get_scale())
        moved = any(not torch.equal(p, b) for p, b in zip(params, before, strict=True))
        assert moved == finite, f"step {step}: finite gradients {finite}, parameters moved {moved}"


@check
def grad_scaler_loop_with_skip_synchronize():
    runs = {}
    for compiled in (True, False):
        loop = GradScalerLoop()
        model, _, counter = train(compiled, loop)
        runs[compiled] = model
        expected = [step != loop.overflow_step for step in range(STEPS)]
        assert loop.finite == expected, f"non-finite gradients seen at {loop.finite}, " \
                                        f"expected {expected}"
        assert_equal_across_ranks([torch.tensor(loop.scales)], "grad scaler scales")
        assert_equal_across_ranks(list(model.parameters()), "grad scaler loop")
        if compiled:
            assert_compiled_once(counter, "grad scaler loop")
    assert_same_params(runs[True], runs[False], TOLERANCES["aot_eager"], "grad scaler loop")


def _optimizer_tensors(opt):
    state = opt.state_dict()["state"]
    return [v for k in sorted(state) for v in state[k].values() if isinstance(v, torch.Tensor)]


@check
def broadcast_state_between_compiled_and_plain_replicas():
    """Ranks start from different weights and Adam state; even ranks compile
    their model, odd ranks do not, so the compiled ranks' state_dict and
    named_parameters names carry `_orig_mod.`. broadcast_parameters and
    broadcast_optimizer_state (Adam built from named_parameters(), so it keeps
    param_names) make every rank rank 0's; DistributedOptimizer then trains
    every rank identically, as in a job where no rank compiled."""
    def run(compile_here):
        torch._dynamo.reset()
        model = mlp(50 + hvd.rank(), dtype=torch.float32)
        counter = CountingBackend() if compile_here else None
        net = torch.compile(model, backend=counter) if compile_here else model
        opt = adam(net.named_parameters())
        x, y = data(99)
        ((net(x) - y) ** 2).mean().backward()
        opt.step()                               # this rank's own Adam state
        opt.zero_grad()
        hvd.broadcast_parameters(net.state_dict(), root_rank=0)
        hvd.broadcast_optimizer_state(opt, root_rank=0)
        assert_equal_across_ranks(list(model.parameters()) + _optimizer_tensors(opt),
                                  "broadcast state")
        prefix = "_orig_mod." if compile_here else ""
        names = opt.state_dict()["param_groups"][0]["param_names"]
        assert names == [prefix + n for n, _ in model.named_parameters()], \
            f"param_names after broadcast_optimizer_state: {names}"
        opt = hvd.DistributedOptimizer(opt, named_parameters=net.named_parameters())
        for step in range(STEPS):
            plain_step(net, opt, *data(step), step)
        if counter is not None:
            assert_compiled_once(counter, "compiled replica")
        return model

    mixed = run(compile_here=hvd.rank() % 2 == 0)
    plain = run(compile_here=False)
    assert_equal_across_ranks(list(mixed.parameters()), "mixed compiled/plain replicas")
    assert_same_params(mixed, plain, TOLERANCES["aot_eager"], "mixed replicas vs no compile")


def _expect_value_error(fn, *needles):
    try:
        fn()
    except ValueError as e:
        assert all(n in str(e) for n in needles), f"unclear error: {e}"
    else:
        raise AssertionError("no ValueError")


@check
def names_colliding_without_orig_mod_are_rejected():
    """A compiled model's names and its plain model's, mixed in one call,
    name each tensor twice; both functions raise before submitting anything."""
    torch._dynamo.reset()
    model = mlp(1, dtype=torch.float32)
    net = torch.compile(model, backend="aot_eager")
    both = list(net.named_parameters()) + list(model.named_parameters())
    _expect_value_error(
        lambda: hvd.DistributedOptimizer(sgd(model.parameters()), named_parameters=both),
        "0.weight", "_orig_mod")
    _expect_value_error(
        lambda: hvd.broadcast_parameters({**net.state_dict(), **model.state_dict()}, root_rank=0),
        "0.weight", "_orig_mod")


@check
def hooks_submit_every_bucket_during_compiled_backward():
    """With one parameter per bucket, every bucket is in flight when
    backward returns, for a compiled model (one graph, and two graphs split
    by a graph break) and for compiled autograd: each parameter's hook fired
    (once: a second firing raises). Gradients match eager; nothing warns.
    (Without compiled autograd the hooks fire only after each compiled
    graph's backward, so bucket reductions overlap only across graphs.)"""
    if hvd.size() == 1:
        return        # no hooks at size 1 (as upstream)

    class Broken(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            x = self.inner[:2](x)
            torch._dynamo.graph_break()
            return self.inner[2:](x)

    def run(mode):
        torch._dynamo.reset()
        model = mlp(7, dtype=torch.float32)
        saved = optimizer_buckets.DEFAULT_BUCKET_BYTES
        optimizer_buckets.DEFAULT_BUCKET_BYTES = 1
        try:
            opt = hvd.DistributedOptimizer(sgd(model.parameters()),
                                           named_parameters=model.named_parameters())
        finally:
            optimizer_buckets.DEFAULT_BUCKET_BYTES = saved
        with torch._dynamo.config.patch(compiled_autograd=mode == "compiled_autograd"):
            net = {"eager": model, "graph_break": Broken(model)}.get(mode, model)
            if mode != "eager":
                net = torch.compile(net, backend="aot_eager")

            def forward_backward(x, y):
                ((net(x) - y) ** 2).mean().backward()

            if mode == "compiled_autograd":
                forward_backward = torch.compile(forward_backward, backend="aot_eager")
            for step in range(3):
                opt.zero_grad()
                forward_backward(*data(step))
                in_flight = len(opt._hvd_submitted)
                assert in_flight == len(opt._hvd_buckets), \
                    f"{mode}: {in_flight} of {len(opt._hvd_buckets)} buckets submitted by hooks"
                opt.step()
        return model

    eager = run("eager")
    for mode in ("compiled", "graph_break", "compiled_autograd"):
        with no_warnings(mode):
            model = run(mode)
        assert_same_params(model, eager, TOLERANCES["aot_eager"], mode)


@check
def horovod_backend_starts_buckets_during_compiled_backward():
    """torch.compile(backend=hvd.compile_backend(...)) splits the graph at
    parameter-bucket boundaries: the last layer's bucket is submitted while
    the first layer's gradient is not computed yet (an order, not a timing),
    and training matches eager. The name "horovod" resolves to the same
    backend (through the torch_dynamo_backends entry point)."""
    from horovod_accel.torch import split_backend  # noqa: PLC0415
    assert torch._dynamo.lookup_backend("horovod") is split_backend.horovod
    eager, _, _ = train(False)
    split, _, _ = train(True, backend=hvd.compile_backend("aot_eager", bucket_bytes=64))
    assert_same_params(split, eager, TOLERANCES["aot_eager"], "split graph vs eager")
    if hvd.size() == 1:
        return        # no hooks at size 1 (as upstream)
    torch._dynamo.reset()
    model = mlp(3, dtype=torch.float32)
    saved = optimizer_buckets.DEFAULT_BUCKET_BYTES
    optimizer_buckets.DEFAULT_BUCKET_BYTES = 1    # one parameter per bucket
    try:
        opt = hvd.DistributedOptimizer(sgd(model.parameters()),
                                       named_parameters=model.named_parameters())
    finally:
        optimizer_buckets.DEFAULT_BUCKET_BYTES = saved
    first, last = model[0].weight, model[-1].weight
    seen = []
    # Runs after DistributedOptimizer's hook on the same parameter.
    last.register_post_accumulate_grad_hook(
        lambda p: seen.append((first.grad is None, len(opt._hvd_submitted))))
    net = torch.compile(model, backend=hvd.compile_backend("aot_eager", bucket_bytes=64))
    opt.zero_grad(set_to_none=True)
    x, y = data(0)
    ((net(x) - y) ** 2).mean().backward()
    opt.step()
    assert seen and seen[0][0], "the first layer's gradient existed when the last layer's was " \
        "ready: the backward was not split"
    assert seen[0][1] >= 1, "no bucket was submitted before the first layer's gradient"


@check
def inductor_sgd_matches_eager():
    compare(backend="inductor", what="inductor SGD")


@check
def inductor_autocast_bf16_matches_eager():
    compare(bf16_autocast_step, backend="inductor", tol_key="inductor+bf16",
            what="inductor bf16 autocast")


def main():
    torch.set_num_threads(1)
    group = sys.argv[1] if len(sys.argv) > 1 else "aot_eager"
    inductor = group == "inductor"
    selected = {fn.__name__ for fn in CHECKS if fn.__name__.startswith("inductor_") == inductor}
    selected &= set(sys.argv[2:]) or selected
    hvd.init()
    code = run_all(selected)
    hvd.shutdown()
    return code


if __name__ == "__main__":
    sys.exit(main())
