"""DistributedOptimizer API behaviour (zero_grad, synchronize/skip_synchronize,
warnings, errors, state_dict, LR schedulers, process sets) and
broadcast_optimizer_state for every torch.optim optimizer."""
import warnings

import torch

import horovod.torch as hvd
from train_common import (assert_equal_across_ranks, assert_same_params, batch, check, mlp, mse,
                          shard, train_pair)
from checks_training import data_loss, sgd


def wrapped(seed=30, opt_cls=torch.optim.SGD, **kwargs):
    model = mlp(seed)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    opt = hvd.DistributedOptimizer(opt_cls(model.parameters(), lr=0.05),
                                   named_parameters=model.named_parameters(), **kwargs)
    return model, opt


def backward(model, step=0):
    x, y = batch(300 + step, 4 * hvd.size())
    mse(model, shard(x, hvd.rank(), hvd.size()), shard(y, hvd.rank(), hvd.size())).backward()


@check
def wrapper_is_an_instance_of_the_optimizer_class():
    model, opt = wrapped()
    assert isinstance(opt, torch.optim.SGD) and type(opt).__name__ == "SGD"
    assert opt.defaults["lr"] == 0.05 and opt.param_groups[0]["lr"] == 0.05
    try:
        hvd.DistributedOptimizer(opt)
    except ValueError:
        pass
    else:
        raise AssertionError("wrapping a DistributedOptimizer twice did not raise")


@check
def zero_grad_set_to_none_and_pending_gradients():
    model, opt = wrapped()
    for set_to_none in (True, False):
        opt.zero_grad()
        backward(model)
        opt.step()
        opt.zero_grad(set_to_none=set_to_none)
        for p in model.parameters():
            if set_to_none:
                assert p.grad is None, "zero_grad(set_to_none=True) left a gradient"
            else:
                assert p.grad is not None and not p.grad.any(), "zero_grad(False) did not zero"
    opt.zero_grad()
    backward(model)                   # every bucket is now being reduced
    try:
        opt.zero_grad()
    except AssertionError as e:
        assert "zero_grad" in str(e), e
    else:
        raise AssertionError("zero_grad() with gradients in flight did not raise")
    opt.step()                        # still consistent afterwards
    opt.zero_grad(set_to_none=False)
    backward(model, 1)
    opt.step()


@check
def synchronize_then_clip_inside_skip_synchronize():
    clip = 0.05

    def clip_grads(opt):
        opt.synchronize()
        torch.nn.utils.clip_grad_norm_(
            [p for g in opt.param_groups for p in g["params"]], clip)

    # Distributed: synchronize, clip the averaged gradients, step without re-synchronizing.
    model = mlp(31)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    ref = mlp(31)
    opt = hvd.DistributedOptimizer(sgd(model.parameters()), named_parameters=model.named_parameters())
    ref_opt = sgd(ref.parameters())
    loss = data_loss(40)
    for step in range(3):
        opt.zero_grad()
        loss(model, step, 0, hvd.rank()).backward()
        clip_grads(opt)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with opt.skip_synchronize():
                opt.step()
        assert not [w for w in caught if "skip_synchronize" in str(w.message)], \
            "step() inside skip_synchronize() warned"
        ref_opt.zero_grad()
        (sum(loss(ref, step, 0, r) for r in range(hvd.size())) / hvd.size()).backward()
        torch.nn.utils.clip_grad_norm_(list(ref.parameters()), clip)
        ref_opt.step()
    assert_same_params(model, ref, 1e-9, "synchronize + clip + skip_synchronize")

    # step() after synchronize() without skip_synchronize() warns (upstream's text).
    opt.zero_grad()
    loss(model, 9, 0, hvd.rank()).backward()
    opt.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opt.step()
    assert any("optimizer.step() called without optimizer.skip_synchronize()" in str(w.message)
               for w in caught), [str(w.message) for w in caught]


@check
def state_dict_round_trip_and_lr_scheduler():
    model, opt = wrapped(32, torch.optim.Adam)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    for step in range(2):
        opt.zero_grad()
        backward(model, step)
        opt.step()
        sched.step()
    assert abs(opt.param_groups[0]["lr"] - 0.05 / 4) < 1e-12, opt.param_groups[0]["lr"]
    state = opt.state_dict()
    assert len(state["state"]) == len(list(model.parameters()))
    opt.load_state_dict(state)
    opt.zero_grad()
    backward(model, 5)
    opt.step()
    assert_equal_across_ranks(list(model.parameters()), "after load_state_dict")

    # A scheduler created on the plain optimizer before wrapping must not
    # make step() bypass gradient averaging.
    model = mlp(33)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    plain = torch.optim.SGD(model.parameters(), lr=0.05)
    torch.optim.lr_scheduler.StepLR(plain, step_size=10)
    opt = hvd.DistributedOptimizer(plain, named_parameters=model.named_parameters())
    opt.zero_grad()
    backward(model, 6)
    opt.step()
    assert_equal_across_ranks(list(model.parameters()), "scheduler before wrapping")


def _optimizer_classes():
    """Every torch.optim optimizer class but LBFGS, with constructor kwargs."""
    out = []
    for name in sorted(dir(torch.optim)):
        cls = getattr(torch.optim, name)
        if (isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer)
                and cls not in (torch.optim.Optimizer, torch.optim.LBFGS)):
            out.append(cls)
    return out


@check
def broadcast_optimizer_state_every_optimizer():
    for cls in _optimizer_classes():
        model = mlp(40)
        params = [p for p in model.parameters() if cls.__name__ != "Muon" or p.dim() == 2]
        try:
            opt = cls(params, lr=0.01 * (hvd.rank() + 1))
        except (TypeError, ValueError):
            opt = cls(params)
        # A local step with rank-specific data so every rank's state differs.
        try:
            x, y = batch(500 + hvd.rank(), 8)
            mse(model, x, y).backward()
            opt.step()
        except RuntimeError:      # e.g. SparseAdam on dense gradients: state stays empty
            pass
        hvd.broadcast_optimizer_state(opt, root_rank=0)
        states = hvd.allgather_object(opt.state_dict(), name=f"bos.{cls.__name__}")
        mine = states[hvd.rank()]
        for other in states:
            _assert_state_equal(mine, other, cls.__name__)
        assert opt.param_groups[0]["lr"] == states[0]["param_groups"][0]["lr"]


def _assert_state_equal(a, b, what):
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), f"{what}: keys differ"
        for k in a:
            _assert_state_equal(a[k], b[k], f"{what}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{what}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_state_equal(x, y, f"{what}[{i}]")
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b), f"{what}: tensors differ"
    else:
        assert a == b or (a != a and b != b), f"{what}: {a!r} != {b!r}"


@check
def broadcast_state_then_train_in_lockstep():
    model = mlp(41 + hvd.rank())                      # different init per rank
    plain = torch.optim.Adam(model.parameters(), lr=0.05)
    backward(model)
    plain.step()                                      # a local step: states differ too
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(plain, root_rank=0)
    opt = hvd.DistributedOptimizer(plain, named_parameters=model.named_parameters())
    for step in range(2):
        opt.zero_grad()
        backward(model, step)
        opt.step()
    assert_equal_across_ranks(list(model.parameters()) +
                              [t for s in opt.state.values() for t in s.values()
                               if isinstance(t, torch.Tensor)], "broadcast state then train")


@check
def argument_errors():
    model = mlp(42)
    params = list(model.named_parameters())

    def expect(exc, text, **kwargs):
        try:
            hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), **kwargs)
        except exc as e:
            assert text in str(e), f"{kwargs}: {e}"
        else:
            raise AssertionError(f"DistributedOptimizer({kwargs}) did not raise {exc.__name__}")

    expect(ValueError, "unique", named_parameters=[("w", params[0][1]), ("w", params[1][1])])
    expect(ValueError, "not named", named_parameters=params[:2])
    expect(ValueError, "tuples", named_parameters=[p for _, p in params])
    expect(ValueError, "op != Average", op=hvd.Sum, gradient_predivide_factor=2.0)
    expect(ValueError, "groups", groups=0)
    expect(ValueError, "only appear once", groups=[[params[0][1]], [params[0][1]]])
    expect(ValueError, "backward_passes_per_step", backward_passes_per_step=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), num_groups=1)
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)


@check
def process_set_subset():
    """Only ranks 0 and 1 average (registered at init when size >= 3); the rest
    train alone. Skipped below 3 ranks."""
    if hvd.size() < 3:
        return
    pair = PAIR_SET
    model = mlp(43)
    ref = mlp(43)
    loss = data_loss(60)
    opt = hvd.DistributedOptimizer(sgd(model.parameters()),
                                   named_parameters=model.named_parameters(), process_set=pair)
    ref_opt = sgd(ref.parameters())
    members = [0, 1] if hvd.rank() in (0, 1) else [hvd.rank()]
    for step in range(3):
        opt.zero_grad()
        loss(model, step, 0, hvd.rank()).backward()
        opt.step()
        ref_opt.zero_grad()
        (sum(loss(ref, step, 0, r) for r in members) / len(members)).backward()
        ref_opt.step()
    assert_same_params(model, ref, 1e-9, "process set [0, 1]")


PAIR_SET = hvd.ProcessSet([0, 1])


@check
def hooks_only_when_distributed():
    """Hooks are registered iff the set has more than one rank (not elastic)."""
    _, opt = train_pair(lambda: mlp(44), sgd, data_loss(61), steps=1, what="sanity")
    assert opt._hvd_hooked == (hvd.size() > 1)
