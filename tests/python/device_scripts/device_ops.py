"""Collectives and training on an accelerator device through its plugin
(run by test_accel_device.py under scripts/emulated_gcu.sh, or on real
hardware). Usage: device_ops.py DEVICE_TYPE. Every rank prints PASS/FAIL
lines; exit status 1 on any failure.

The script is an unchanged user script: it only says torch.device(TYPE); the
device comes from torch's device-backend autoload (the test 'gcu' device) or
from torch itself ('cuda')."""
import sys

import torch
import torch.nn as nn

import horovod.torch as hvd
from device_checks import check, finish

DEVICE_TYPE = sys.argv[1]
hvd.init()
RANK, SIZE = hvd.rank(), hvd.size()
_mod = getattr(torch, DEVICE_TYPE)
DEV = torch.device(DEVICE_TYPE, hvd.local_rank() % _mod.device_count())


def same(got, want, tol=0.0):
    assert got.device == DEV, f"result on {got.device}, expected {DEV}"
    g = got.cpu()
    if tol:
        assert torch.allclose(g.double(), want.double(), atol=tol), f"got {g}, want {want}"
    else:
        assert torch.equal(g, want), f"got {g}, want {want}"


@check
def allreduce_sum_average_and_scales():
    x = torch.arange(10, dtype=torch.float32, device=DEV) + RANK
    want = sum(torch.arange(10, dtype=torch.float32) + r for r in range(SIZE))
    same(hvd.allreduce(x, op=hvd.Sum, name="ar.sum"), want)
    same(hvd.allreduce(x, name="ar.avg"), want / SIZE, 1e-6)
    same(hvd.allreduce(x, op=hvd.Sum, prescale_factor=0.5, postscale_factor=4.0, name="ar.sc"),
         want * 2, 1e-5)
    y = torch.full((7,), RANK + 1, dtype=torch.int32, device=DEV)
    same(hvd.allreduce(y, op=hvd.Max, name="ar.max"), torch.full((7,), SIZE, dtype=torch.int32))
    same(hvd.allreduce(y, op=hvd.Sum, postscale_factor=0.5, name="ar.isc"),
         torch.full((7,), int(SIZE * (SIZE + 1) / 2 * 0.5), dtype=torch.int32))
    h = torch.ones(5, dtype=torch.float16, device=DEV)
    same(hvd.allreduce(h, op=hvd.Sum, name="ar.h"), torch.full((5,), float(SIZE), dtype=torch.float16))


@check
def inplace_grouped_and_async():
    x = torch.ones(3, 4, device=DEV) * (RANK + 1)
    hvd.allreduce_(x, op=hvd.Sum, name="ar.inplace")
    same(x, torch.ones(3, 4) * (SIZE * (SIZE + 1) / 2))
    ts = [torch.full((n,), float(RANK), device=DEV) for n in (1, 17, 0, 33)]
    outs = hvd.grouped_allreduce(ts, op=hvd.Sum, name="ar.group")
    for n, o in zip((1, 17, 0, 33), outs):
        same(o, torch.full((n,), float(sum(range(SIZE)))))
    hs = [hvd.allreduce_async(torch.full((9,), float(i), device=DEV), op=hvd.Sum, name=f"ar.a{i}")
          for i in range(5)]
    for i, h in enumerate(hs):
        same(hvd.synchronize(h), torch.full((9,), float(i * SIZE)))


@check
def allgather_broadcast_alltoall_reducescatter():
    rows = RANK + 1 if RANK != 1 else 0  # uneven, one rank empty
    x = torch.full((rows, 3), float(RANK), device=DEV)
    want = torch.cat([torch.full((r + 1 if r != 1 else 0, 3), float(r)) for r in range(SIZE)])
    same(hvd.allgather(x, name="ag"), want)
    b = torch.arange(6, dtype=torch.int64, device=DEV) * (RANK + 1)
    root = SIZE - 1
    same(hvd.broadcast(b, root, name="bc"), torch.arange(6, dtype=torch.int64) * (root + 1))
    splits = torch.tensor([(RANK + j) % 3 for j in range(SIZE)], dtype=torch.int32)
    a = torch.cat([torch.full((int(s), 2), float(100 * RANK + j)) for j, s in enumerate(splits)]).to(DEV)
    out, rsplits = hvd.alltoall(a, splits=splits, name="a2a")
    want = torch.cat([torch.full(((r + RANK) % 3, 2), float(100 * r + RANK)) for r in range(SIZE)])
    same(out, want)
    assert rsplits.tolist() == [(r + RANK) % 3 for r in range(SIZE)], rsplits
    assert rsplits.device.type == "cpu", rsplits.device  # splits were a CPU tensor
    # received splits take the device of `splits` (upstream: splits.new())
    out, rsplits = hvd.alltoall(a, splits=splits.to(DEV), name="a2a.dev_splits")
    same(out, want)
    assert rsplits.device == a.device, (rsplits.device, a.device)
    assert rsplits.cpu().tolist() == [(r + RANK) % 3 for r in range(SIZE)], rsplits
    rs = torch.ones(2 * SIZE + 1, 3, device=DEV) * (RANK + 1)
    got = hvd.reducescatter(rs, op=hvd.Sum, name="rs")
    mine = 2 + (1 if RANK < 1 else 0)
    same(got, torch.ones(mine, 3) * (SIZE * (SIZE + 1) / 2))


@check
def bool_allgather_and_object_ops():
    m = torch.tensor([RANK % 2 == 0, True], device=DEV)
    want = torch.tensor(sum(([r % 2 == 0, True] for r in range(SIZE)), []))
    same(hvd.allgather(m, name="ag.bool"), want)
    assert hvd.broadcast_object({"r": RANK}, root_rank=0) == {"r": 0}


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))


@check
def training_matches_cpu():
    """DistributedOptimizer on DEV vs the same data-parallel run on the CPU."""
    torch.manual_seed(1)
    data = torch.randn(SIZE * 8, 6)
    target = data.sum(1, keepdim=True) * 0.3
    mine = slice(RANK * 8, RANK * 8 + 8)
    results = {}
    for label, where in (("cpu", "cpu"), ("dev", DEV)):  # names must agree across ranks
        model = _model().to(where)
        opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05),
                                       named_parameters=[(f"{label}.{n}", p) for n, p in
                                                         model.named_parameters()])
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        losses = []
        for _ in range(15):
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(data[mine].to(where)), target[mine].to(where))
            loss.backward()
            opt.step()
            losses.append(hvd.allreduce(loss.detach().cpu(), name=f"loss.{label}").item())
        results[label] = ([p.detach().cpu() for p in model.parameters()], losses)
    cpu_params, cpu_losses = results["cpu"]
    dev_params, dev_losses = results["dev"]
    assert dev_losses[-1] < dev_losses[0] * 0.7, f"loss did not fall: {dev_losses}"
    for a, b in zip(cpu_params, dev_params):
        assert torch.allclose(a, b, atol=1e-5), f"device params differ from CPU by {(a - b).abs().max()}"



@check
def compiled_collectives_match_eager():
    # torch.compile traces the collectives on the device too (the aot_eager
    # backend: the graph runs the device's own kernels); the results equal
    # the eager ops' and stay on the device.
    import torch._dynamo  # noqa: PLC0415 -- only this check compiles

    def step(x):
        y = hvd.allreduce(x, name="c.ar") * 2
        g = hvd.allgather(x[:RANK + 1], name="c.ag")
        b = hvd.broadcast(x, root_rank=SIZE - 1, name="c.bc")
        a2a = hvd.alltoall(x, name="c.a2a")
        rs = hvd.reducescatter(x, name="c.rs", op=hvd.Sum)
        h = hvd.allreduce_async(x + 1, name="c.async")
        return y, g, b, a2a, rs, hvd.synchronize(h)

    x = (torch.arange(SIZE * 6, dtype=torch.float32).reshape(SIZE * 2, 3) + RANK).to(DEV)
    graphs = torch._dynamo.explain(step)(x)
    assert graphs.graph_break_count == 0, graphs.break_reasons
    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    for got, want in zip(compiled(x), step(x)):
        same(got, want.cpu())


hvd.shutdown()
finish()
