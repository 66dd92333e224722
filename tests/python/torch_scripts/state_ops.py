"""broadcast_object, allgather_object, broadcast_parameters,
broadcast_optimizer_state (every torch.optim optimizer) and SyncBatchNorm."""
import torch
import torch.nn as nn

import horovod.torch as hvd
from _common import check, check_equal, expect_raises, run


def same(a, b, path="state"):
    """Recursive equality of nested dicts/lists/tensors (dtype included)."""
    if isinstance(a, torch.Tensor):
        check(isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b),
              f"{path}: {a!r} != {b!r}")
    elif isinstance(a, dict):
        check(isinstance(b, dict) and a.keys() == b.keys(), f"{path}: keys {a.keys()} != {b}")
        for k in a:
            same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)):
        check(isinstance(b, (list, tuple)) and len(a) == len(b), f"{path}: {a} != {b}")
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}[{i}]")
    else:
        check(a == b, f"{path}: {a!r} != {b!r}")


def test_objects():
    r, n = hvd.rank(), hvd.size()
    for root in range(n):
        mine = {"rank": r, "payload": list(range(r * 100)), "t": torch.arange(r + 1)}
        got = hvd.broadcast_object(mine if r == root else None, root_rank=root)
        same(got, {"rank": root, "payload": list(range(root * 100)), "t": torch.arange(root + 1)},
             f"broadcast_object root {root}")
        got = hvd.broadcast_object(lambda v, k=root: v + k, root_rank=root, name=f"fn{root}")
        check(got(1) == 1 + root, "broadcast_object of a lambda (cloudpickle)")
    objs = hvd.allgather_object({"r": r} if r % 2 else [r] * r)
    same(objs, [{"r": q} if q % 2 else [q] * q for q in range(n)], "allgather_object")
    same(hvd.allgather_object(r * 1.5, name="floats"), [q * 1.5 for q in range(n)], "named")


def make_model(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))


def states_equal_everywhere(sd, what):
    gathered = hvd.allgather_object(sd)
    for q, other in enumerate(gathered):
        same(other, gathered[0], f"{what}: rank {q} vs rank 0")


def test_broadcast_parameters():
    r, n = hvd.rank(), hvd.size()
    for root in range(n):
        model = make_model(100 + r)
        model(torch.randn(5, 4))  # rank-dependent BatchNorm running stats
        want = hvd.broadcast_object(model.state_dict() if r == root else None, root)
        hvd.broadcast_parameters(model.state_dict(), root_rank=root)
        same(model.state_dict(), want, f"state_dict from root {root}")
    model = make_model(200 + r)
    hvd.broadcast_parameters(model.named_parameters(), root_rank=0)
    hvd.broadcast_parameters(list(model.parameters()), root_rank=0)
    states_equal_everywhere({k: v for k, v in model.named_parameters()}, "named_parameters")
    expect_raises(ValueError, lambda: hvd.broadcast_parameters(3, 0), "bad params type")


def _optimizers(model):
    p = list(model.parameters())
    yield "SGD", torch.optim.SGD(p, lr=0.1, momentum=0.9)
    yield "Adam", torch.optim.Adam(p, lr=0.01)
    yield "AdamW", torch.optim.AdamW(p, lr=0.01, amsgrad=True)
    yield "Adagrad", torch.optim.Adagrad(p, lr=0.1)
    yield "RMSprop", torch.optim.RMSprop(p, lr=0.01, momentum=0.5, centered=True)
    yield "Adadelta", torch.optim.Adadelta(p)
    yield "Adamax", torch.optim.Adamax(p)
    yield "NAdam", torch.optim.NAdam(p)
    yield "RAdam", torch.optim.RAdam(p)
    yield "ASGD", torch.optim.ASGD(p)
    yield "Rprop", torch.optim.Rprop(p)
    if hasattr(torch.optim, "Adafactor"):
        yield "Adafactor", torch.optim.Adafactor(p)
    yield "SGD-dist", hvd.DistributedOptimizer(torch.optim.SGD(p, lr=0.1, momentum=0.9),
                                               named_parameters=model.named_parameters())


def _train(model, opt, steps, seed):
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        opt.zero_grad()
        model(torch.randn(6, 4, generator=g)).pow(2).sum().backward()
        opt.step()


def test_broadcast_optimizer_state():
    r, n = hvd.rank(), hvd.size()
    count = len(list(_optimizers(make_model(7))))
    for index in range(count):
        # rank 0 has not stepped (empty state); rank n-1 has (unless n == 1)
        for root in sorted({0, n - 1}, reverse=True):
            model = make_model(7)
            name, opt = list(_optimizers(model))[index]
            for group in opt.param_groups:
                group["lr"] = 0.01 * (r + 1)  # rank-dependent hyper-parameters
            # rank-dependent state: rank r takes r steps; DistributedOptimizer
            # steps are collective, so there every rank takes one step.
            distributed = name.endswith("-dist")
            _train(model, opt, 1 if distributed else r, seed=r)
            hvd.broadcast_optimizer_state(opt, root_rank=root)
            states_equal_everywhere(opt.state_dict(), f"{name} root {root}")
            check(opt.param_groups[0]["lr"] == 0.01 * (root + 1), f"{name}: lr from root {root}")
            check(root == 0 or bool(opt.state_dict()["state"]),
                  f"{name}: the stepped root's state reached every rank")
            # the loaded state is usable: identical steps keep it identical
            hvd.broadcast_parameters(model.state_dict(), root_rank=0)
            _train(model, opt, 2, seed=42)
            states_equal_everywhere(opt.state_dict(), f"{name} root {root} after training")
    # SparseAdam needs sparse gradients
    emb = nn.Embedding(10, 3, sparse=True)
    opt = torch.optim.SparseAdam(emb.parameters(), lr=0.01 * (r + 1))
    for _ in range(r + 1):
        opt.zero_grad()
        emb(torch.tensor([r, 2 * r + 1])).sum().backward()
        opt.step()
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    states_equal_everywhere(opt.state_dict(), "SparseAdam")
    lbfgs = torch.optim.LBFGS(make_model(1).parameters())
    expect_raises(ValueError, lambda: hvd.broadcast_optimizer_state(lbfgs, 0), "LBFGS",
                  match="LBFGS")


def test_broadcast_optimizer_state_leaves_zero_grads():
    """As upstream: a rank whose optimizer had no state is left with zero
    gradients (sparse for SparseAdam) on every parameter requiring one;
    frozen parameters keep grad None; a stepped optimizer's grads stay."""
    model = make_model(3)
    frozen = nn.Parameter(torch.ones(2), requires_grad=False)
    opt = torch.optim.Adam([{"params": model.parameters()}, {"params": [frozen]}], lr=0.01)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    for name, p in model.named_parameters():
        check(p.grad is not None and p.grad.shape == p.shape and not p.grad.any(),
              f"{name}: expected a zero grad, got {p.grad!r}")
    check(frozen.grad is None, "a parameter without requires_grad got a grad")
    _train(model, opt, 1, seed=3)
    kept = [p.grad.clone() for p in model.parameters()]
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    for p, g in zip(model.parameters(), kept):
        check(torch.equal(p.grad, g), "a stepped optimizer's gradients were replaced")
    emb = nn.Embedding(10, 3, sparse=True)
    sparse_opt = torch.optim.SparseAdam(emb.parameters(), lr=0.01)
    hvd.broadcast_optimizer_state(sparse_opt, root_rank=0)
    check(emb.weight.grad is not None and emb.weight.grad.is_sparse
          and emb.weight.grad.to_dense().abs().sum() == 0, "SparseAdam: sparse zero grad")


def test_sync_batch_norm():
    r, n = hvd.rank(), hvd.size()
    torch.manual_seed(5)
    inputs = [torch.randn(3 + q, 4, 5, dtype=torch.float64) * (q + 1) + q for q in range(n)]
    grads_out = [torch.randn_like(x) for x in inputs]
    sbn = hvd.SyncBatchNorm(4, momentum=0.3).double()
    ref = nn.BatchNorm1d(4, momentum=0.3).double()
    with torch.no_grad():
        sbn.weight.copy_(torch.tensor([1.0, 2.0, -1.0, 0.5]))
        ref.weight.copy_(sbn.weight)
    x = inputs[r].clone().requires_grad_()
    y = sbn(x)
    (y * grads_out[r]).sum().backward()
    full = torch.cat(inputs).requires_grad_()
    y_ref = ref(full)
    (y_ref * torch.cat(grads_out)).sum().backward()
    start = sum(3 + q for q in range(r))
    check_equal(y, y_ref[start:start + 3 + r].detach(), "SyncBatchNorm output", atol=1e-10)
    check_equal(x.grad, full.grad[start:start + 3 + r], "SyncBatchNorm input grad", atol=1e-10)
    check_equal(sbn.running_mean, ref.running_mean, "running_mean", atol=1e-10)
    check_equal(sbn.running_var, ref.running_var, "running_var", atol=1e-10)
    w_grad = hvd.allreduce(sbn.weight.grad, op=hvd.Sum, name="sbn.wgrad")
    check_equal(w_grad, ref.weight.grad, "weight grad summed over ranks", atol=1e-10)
    sbn.eval()
    ref.eval()
    check_equal(sbn(inputs[r]), ref(inputs[r]), "eval mode uses running stats", atol=1e-10)


run([test_objects, test_broadcast_parameters, test_broadcast_optimizer_state,
     test_broadcast_optimizer_state_leaves_zero_grads, test_sync_batch_norm])
