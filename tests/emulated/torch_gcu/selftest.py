"""Checks of the test-only torch device ('gcu', or 'emucuda' with
HVDA_TEST_DEVICE_RUNTIME=cuda); run under tests/emulated/torch_gcu/env.sh with
the flavour's runtime variable set (HOROVOD_GCU_RUNTIME_LIB /
HOROVOD_CUDA_RUNTIME_LIB):

    python tests/emulated/torch_gcu/selftest.py [check ...]

Only `import torch` is needed: the device comes from the `torch.backends` entry
point. Prints `OK <check>` or `FAIL <check>` with the traceback for each check,
then `ALL OK` when every check passed (exit status 1 otherwise).
"""
import copy
import io
import sys
import traceback
import warnings

import torch

# The device under test: whatever the autoload named PrivateUse1 ('gcu', 'emucuda').
DEV = torch._C._get_privateuse1_backend_name()
MOD = getattr(torch, DEV)  # torch.gcu / torch.emucuda
CHECKS = {}


def check(fn):
    CHECKS[fn.__name__] = fn
    return fn


def same(a, b, tol=0.0):
    a = a.cpu() if isinstance(a, torch.Tensor) else torch.as_tensor(a)
    b = b.cpu() if isinstance(b, torch.Tensor) else torch.as_tensor(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    if tol:
        assert torch.allclose(a, b, atol=tol, rtol=tol), (a, b)
    else:
        assert torch.equal(a, b), (a, b)


@check
def basics():
    x = torch.ones(4, device=DEV)
    assert x.device.type == DEV and x.device.index == MOD.current_device(), x.device
    assert getattr(x, f"is_{DEV}") and not x.is_cpu
    assert torch.device(DEV).type == DEV
    same(x, torch.ones(4))
    y = (x * 3 + 1) / 2 - x
    assert y.device.type == DEV
    same(y, torch.full((4,), 1.0))
    assert float(x.sum()) == 4.0 and x.sum().item() == 4.0
    assert MOD.is_available() and MOD.device_count() >= 1
    assert MOD.is_initialized()
    MOD.synchronize()
    MOD.synchronize(0)
    s = MOD.current_stream()
    handle = getattr(s, f"{DEV}_stream")  # gcu_stream / emucuda_stream
    assert handle == 0 and s.native_handle == 0 and isinstance(handle, int)
    assert s.device == torch.device(DEV, MOD.current_device())
    assert MOD.default_stream() == s
    assert f"device='{DEV}:0'" in repr(x), repr(x)
    assert torch.accelerator.current_accelerator() == torch.device(DEV)
    assert torch.accelerator.device_count() == MOD.device_count()
    torch.accelerator.synchronize()


@check
def dtypes_and_factories():
    ref = torch.arange(24).reshape(2, 3, 4)
    for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
               torch.int32, torch.int8, torch.uint8, torch.bool, torch.complex64):
        c = ref.to(dt) if dt != torch.complex64 else torch.complex(ref.float(), -ref.float())
        g = c.to(DEV)
        assert g.dtype == dt and g.device.type == DEV
        same(g, c)
        if not dt.is_complex:
            same(g.to(torch.float64), c.to(torch.float64))
    same(torch.zeros(3, 2, device=DEV), torch.zeros(3, 2))
    same(torch.full((2, 2), 7, device=DEV), torch.full((2, 2), 7))
    same(torch.arange(5, device=DEV), torch.arange(5))
    same(torch.eye(3, device=DEV), torch.eye(3))
    same(torch.tensor([1.5, 2.5], device=DEV), torch.tensor([1.5, 2.5]))
    same(torch.empty(0, device=DEV), torch.empty(0))
    same(torch.zeros_like(torch.ones(2, device=DEV)), torch.zeros(2))
    torch.manual_seed(3)
    r = torch.randn(5, device=DEV)
    torch.manual_seed(3)
    same(r, torch.randn(5))  # random ops draw from the CPU generator


@check
def noncontiguous_copies():
    base = torch.arange(48, dtype=torch.float32).reshape(6, 8)
    g = base.to(DEV)
    # device -> host from non-contiguous views
    same(g.t(), base.t())
    same(g[:, 1::3], base[:, 1::3])
    same(g[2:5, 3], base[2:5, 3])
    same(g.t()[1:, ::2].contiguous(), base.t()[1:, ::2].contiguous())
    same(g.permute(1, 0).reshape(-1), base.permute(1, 0).reshape(-1))
    same(g[:, :1].expand(6, 5), base[:, :1].expand(6, 5))
    # host -> device into non-contiguous destinations; the gaps keep their values
    d = torch.zeros(6, 8, device=DEV)
    ref = torch.zeros(6, 8)
    src = torch.arange(24, dtype=torch.float32).reshape(6, 4) + 100
    d[:, ::2] = src
    ref[:, ::2] = src
    same(d, ref)
    d.t()[3].copy_(torch.full((6,), -1.0))
    ref.t()[3].copy_(torch.full((6,), -1.0))
    same(d, ref)
    d[1:3, 2:6] = src.t()[:2, :4]  # non-contiguous source and destination
    ref[1:3, 2:6] = src.t()[:2, :4]
    same(d, ref)
    # device -> device
    e = torch.zeros(8, 6, device=DEV)
    e.copy_(d.t())
    same(e, ref.t())
    e[::2, 1:4] = d[1:5, ::2][:, :3]
    r2 = ref.t().clone()
    r2[::2, 1:4] = ref[1:5, ::2][:, :3]
    same(e, r2)
    # dtype conversion and broadcasting in copy_
    i = torch.zeros(3, 4, dtype=torch.int64, device=DEV)
    i.copy_(torch.tensor([1.7, 2.2, 3.9, -4.5]))
    same(i, torch.tensor([1.7, 2.2, 3.9, -4.5]).to(torch.int64).expand(3, 4))
    f = torch.zeros(2, 3, dtype=torch.float64, device=DEV)
    f.copy_(torch.tensor([[1], [2]], dtype=torch.int32, device=DEV))
    same(f, torch.tensor([[1.0, 1, 1], [2, 2, 2]], dtype=torch.float64))
    # channels_last (dense, not contiguous) both ways
    cl = torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    gcl = cl.to(DEV)
    assert gcl.is_contiguous(memory_format=torch.channels_last)
    same(gcl, cl)
    same(gcl.contiguous(), cl.contiguous())
    # conjugate and negative views
    z = torch.complex(torch.arange(4.0), torch.arange(4.0) + 1)
    gz = z.to(DEV)
    same(gz.conj(), z.conj().resolve_conj())
    gz2 = torch.zeros(4, dtype=torch.complex64, device=DEV)
    gz2.conj().copy_(z)
    same(gz2, z.conj().resolve_conj())


@check
def views_alias_device_memory():
    g = torch.zeros(3, 4, device=DEV)
    v = g.view(-1)
    v[5] = 7.0
    assert g[1, 1].item() == 7.0
    g.t()[2, 0] = 3.0
    assert g[0, 2].item() == 3.0
    g.unsqueeze(0).squeeze(0)[2].fill_(1.0)
    same(g[2], torch.ones(4))
    g.narrow(1, 3, 1).zero_()
    assert g[:, 3].abs().sum().item() == 0.0
    u = torch.arange(10.0, device=DEV).unfold(0, 4, 3)
    same(u, torch.arange(10.0).unfold(0, 4, 3))
    z = torch.zeros(3, dtype=torch.complex64, device=DEV)
    torch.view_as_real(z)[:, 1] = 2.0
    same(z, torch.full((3,), 2j, dtype=torch.complex64))
    same(torch.view_as_complex(torch.ones(2, 2, device=DEV)), torch.full((2,), 1 + 1j))
    r = torch.arange(12.0, device=DEV).reshape(3, 4)
    assert r.reshape(4, 3).data_ptr() == r.data_ptr()
    a, b = torch.arange(6.0, device=DEV).split(3)
    b.add_(10)
    same(b, torch.tensor([13.0, 14, 15]))
    same(r.as_strided((2, 2), (1, 4), 1),
         torch.arange(12.0).reshape(3, 4).as_strided((2, 2), (1, 4), 1))
    same(r.view(torch.int32).view(torch.float32), torch.arange(12.0).reshape(3, 4))


@check
def resize_and_set():
    t = torch.arange(4.0, device=DEV)
    ptr = t.data_ptr()
    t.resize_(2)
    assert t.data_ptr() == ptr
    same(t, torch.tensor([0.0, 1.0]))
    t.resize_(10)  # grows the storage: the old contents move device-to-device
    same(t[:4], torch.arange(4.0))
    s = torch.empty(0, device=DEV)
    s.set_(t.untyped_storage(), 1, (2, 1), (1, 1))
    same(s, torch.tensor([[1.0], [2.0]]))
    s2 = torch.empty(0, device=DEV).set_(t)
    assert s2.data_ptr() == t.data_ptr()
    o = torch.empty(0, device=DEV)
    torch.add(torch.ones(3, device=DEV), 1, out=o)  # out= resizes through the fallback
    same(o, torch.full((3,), 2.0))
    st = torch.arange(3.0, device=DEV).untyped_storage()
    st.resize_(24)  # storage resize (PrivateUse1 hook)
    assert st.nbytes() == 24
    e = torch.empty(0, device=DEV).set_()
    assert e.numel() == 0 and e.device.type == DEV


@check
def ops_through_fallback():
    a = torch.randn(4, 5)
    b = torch.randn(5, 3)
    ga, gb = a.to(DEV), b.to(DEV)
    same(ga @ gb, a @ b, 1e-6)
    same(torch.relu(ga), torch.relu(a))
    same(torch.cat([ga, ga], 1), torch.cat([a, a], 1))
    same(torch.stack([ga, ga]), torch.stack([a, a]))
    same(ga[ga > 0], a[a > 0])
    same(torch.where(ga > 0, ga, -ga.t().t()), torch.where(a > 0, a, -a))
    same(torch.nn.functional.smooth_l1_loss(ga, gb.t()[:1].expand(4, 5)),
         torch.nn.functional.smooth_l1_loss(a, b.t()[:1].expand(4, 5)), 1e-6)
    same(ga.max(1).values, a.max(1).values)
    same(ga.argmax(), a.argmax())
    same(ga.sum(0), a.sum(0), 1e-6)
    same(ga.mean(), a.mean(), 1e-6)
    same(torch.nn.functional.softmax(ga, 1), torch.nn.functional.softmax(a, 1), 1e-6)
    same(torch.nn.functional.mse_loss(ga, ga * 2), torch.nn.functional.mse_loss(a, a * 2), 1e-6)
    idx = torch.tensor([3, 0, 1])
    same(ga[idx.to(DEV)], a[idx])
    h = ga.clone()
    h[idx.to(DEV)] = 0.0
    ah = a.clone()
    ah[idx] = 0.0
    same(h, ah)
    same(ga.sort(1).values, a.sort(1).values)
    same(torch.nonzero(ga > 0), torch.nonzero(a > 0))
    assert torch.equal(ga, ga.clone()) and not torch.equal(ga, ga + 1)
    ga.mul_(2).add_(1)
    same(ga, a * 2 + 1, 1e-6)
    l = [torch.ones(3, device=DEV), torch.zeros(2, device=DEV)]
    torch._foreach_add_(l, 2.0)
    torch._foreach_mul_(l, [torch.full((3,), 3.0, device=DEV), torch.ones(2, device=DEV)])
    same(l[0], torch.full((3,), 9.0))
    same(l[1], torch.full((2,), 2.0))
    n = torch._foreach_norm(l)
    same(n[0], torch.tensor(9.0 * 3 ** 0.5), 1e-5)


@check
def autograd():
    w = torch.randn(3, 2, device=DEV, requires_grad=True)
    x = torch.randn(4, 3, device=DEV)
    y = (x @ w).relu().pow(2).sum()
    y.backward()
    assert w.grad is not None and w.grad.device == w.device
    wc = w.detach().cpu().requires_grad_()
    (x.cpu() @ wc).relu().pow(2).sum().backward()
    same(w.grad, wc.grad, 1e-5)


def fwd_bwd(make_module, x, device):
    """Output, input grad and parameter grads of one forward/backward, on the CPU."""
    torch.manual_seed(0)
    m = make_module().to(device)
    x = x.detach().clone().to(device).requires_grad_()
    y = m(x)
    y = y[0] if isinstance(y, tuple) else y
    y.pow(2).sum().backward()
    return torch.cat([y.detach().flatten(), x.grad.flatten()] +
                     [p.grad.flatten() for p in m.parameters()]).cpu()


@check
def layers_match_cpu():
    nn = torch.nn
    cases = {
        "conv_bn_pool": (lambda: nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(),
                                               nn.MaxPool2d(2)), torch.randn(2, 3, 8, 8)),
        "conv_transpose_groupnorm": (lambda: nn.Sequential(nn.ConvTranspose2d(3, 4, 3),
                                                           nn.GroupNorm(2, 4)),
                                     torch.randn(2, 3, 5, 5)),
        "lstm": (lambda: nn.LSTM(4, 3, num_layers=2), torch.randn(5, 2, 4)),
        "gru": (lambda: nn.GRU(4, 3, bias=False), torch.randn(5, 2, 4)),
        "transformer": (lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                           batch_first=True),
                        torch.randn(2, 5, 8)),
    }
    for name, (make, x) in cases.items():
        g, c = fwd_bwd(make, x, DEV), fwd_bwd(make, x, "cpu")
        assert torch.allclose(g, c, rtol=1e-4, atol=1e-4), (name, (g - c).abs().max())


@check
def autocast():
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    ga, gb = a.to(DEV), b.to(DEV)
    with torch.autocast(DEV, dtype=torch.bfloat16):
        y = ga @ gb
        s = torch.softmax(y, 1)
    assert y.dtype == torch.bfloat16 and y.device.type == DEV, y
    assert s.dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ref = a @ b
    same(y, ref)


def train(device, steps, make_opt):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    model.to(device)  # created on the CPU (same initial weights), then moved
    opt = make_opt(model.parameters())
    g = torch.Generator().manual_seed(1)
    xs = torch.randn(32, 6, generator=g)
    ys = xs @ torch.randn(6, 1, generator=g) + 0.1
    xs, ys = xs.to(device), ys.to(device)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xs), ys)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().cpu() for p in model.parameters()]


@check
def training_matches_cpu():
    makers = {
        "sgd_foreach": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-4,
                                                 foreach=True),
        "sgd_loop": lambda p: torch.optim.SGD(p, lr=0.05, foreach=False),
        "adam_foreach": lambda p: torch.optim.Adam(p, lr=0.01, foreach=True),
    }
    for name, make in makers.items():
        lg, pg = train(DEV, 15, make)
        lc, pc = train("cpu", 15, make)
        assert lg[-1] < lg[0] * 0.8, (name, lg)
        for a, b in zip(lg, lc):
            assert abs(a - b) <= 1e-5 * max(1.0, abs(b)), (name, lg, lc)
        for a, b in zip(pg, pc):
            same(a, b, 1e-5)


@check
def module_methods_and_serialization():
    m = torch.nn.Linear(3, 2)
    getattr(m, DEV)()
    assert m.weight.device.type == DEV
    t = getattr(torch.ones(2), DEV)()
    assert t.device.type == DEV
    sd = copy.deepcopy(m.state_dict())
    assert sd["weight"].device.type == DEV
    same(sd["weight"], m.weight.detach())
    buf = io.BytesIO()
    torch.save(m.state_dict(), buf)
    buf.seek(0)
    loaded = torch.load(buf)
    assert loaded["weight"].device.type == DEV
    same(loaded["weight"], m.weight.detach())
    buf.seek(0)
    same(torch.load(buf, map_location="cpu")["bias"], m.bias.detach().cpu())


@check
def multi_device():
    n = MOD.device_count()
    if n < 2:
        print("  (one device: skipped)")
        return
    x = torch.arange(6.0).reshape(2, 3)
    g0 = x.to(f"{DEV}:0")
    g1 = g0.to(f"{DEV}:1")
    assert g1.device == torch.device(DEV, 1)
    same(g1, x)
    same(g1 * 2, x * 2)
    assert (g1 * 2).device == torch.device(DEV, 1)
    same(g1.t().to(f"{DEV}:0"), x.t())
    with MOD.device(1):
        assert MOD.current_device() == 1
        y = torch.ones(2, device=DEV)
        assert y.device.index == 1
        assert MOD.current_stream().device.index == 1
        MOD.synchronize()
    assert MOD.current_device() == 0
    MOD.set_device(1)
    assert MOD.current_device() == 1
    MOD.set_device(f"{DEV}:0")
    assert MOD.current_device() == 0
    w = torch.randn(3, 2, device=f"{DEV}:1", requires_grad=True)
    (w * 2).sum().backward()
    same(w.grad, torch.full((3, 2), 2.0, device=f"{DEV}:1"))


@check
def events_and_pinned_memory():
    e = torch.Event(device=DEV)
    torch.ones(3, device=DEV).add_(1)
    e.record()
    e.synchronize()
    assert e.query()
    s = torch.accelerator.current_stream()  # the default stream, via the device guard
    assert s.device == torch.device(DEV, MOD.current_device()) and s.stream_id == 0
    assert s.query()
    s.synchronize()
    assert e.query() and s.query()
    s.wait_event(e)
    e2 = s.record_event()
    e2.synchronize()
    p = torch.arange(4.0).pin_memory()
    assert p.is_pinned() and not torch.arange(4.0).is_pinned()
    same(p.to(DEV, non_blocking=True), torch.arange(4.0))


def main(names):
    warnings.simplefilter("error", UserWarning)  # e.g. no "seed does not take effect"
    ok = True
    for name in names or CHECKS:
        try:
            CHECKS[name]()
            print(f"OK {name}", flush=True)
        except Exception:
            ok = False
            print(f"FAIL {name}\n{traceback.format_exc()}", flush=True)
    if ok:
        print("ALL OK", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
