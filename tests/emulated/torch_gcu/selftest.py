"""Checks of the test-only 'gcu' torch device; run under tests/emulated/torch_gcu/env.sh
with HOROVOD_GCU_RUNTIME_LIB set:

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
    x = torch.ones(4, device="gcu")
    assert x.device.type == "gcu" and x.device.index == torch.gcu.current_device(), x.device
    assert x.is_gcu and not x.is_cpu
    assert torch.device("gcu").type == "gcu"
    same(x, torch.ones(4))
    y = (x * 3 + 1) / 2 - x
    assert y.device.type == "gcu"
    same(y, torch.full((4,), 1.0))
    assert float(x.sum()) == 4.0 and x.sum().item() == 4.0
    assert torch.gcu.is_available() and torch.gcu.device_count() >= 1
    assert torch.gcu.is_initialized()
    torch.gcu.synchronize()
    torch.gcu.synchronize(0)
    s = torch.gcu.current_stream()
    assert s.gcu_stream == 0 and s.native_handle == 0 and isinstance(s.gcu_stream, int)
    assert s.device == torch.device("gcu", torch.gcu.current_device())
    assert torch.gcu.default_stream() == s
    assert "device='gcu:0'" in repr(x), repr(x)
    assert torch.accelerator.current_accelerator() == torch.device("gcu")
    assert torch.accelerator.device_count() == torch.gcu.device_count()
    torch.accelerator.synchronize()


@check
def dtypes_and_factories():
    ref = torch.arange(24).reshape(2, 3, 4)
    for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
               torch.int32, torch.int8, torch.uint8, torch.bool, torch.complex64):
        c = ref.to(dt) if dt != torch.complex64 else torch.complex(ref.float(), -ref.float())
        g = c.to("gcu")
        assert g.dtype == dt and g.device.type == "gcu"
        same(g, c)
        if not dt.is_complex:
            same(g.to(torch.float64), c.to(torch.float64))
    same(torch.zeros(3, 2, device="gcu"), torch.zeros(3, 2))
    same(torch.full((2, 2), 7, device="gcu"), torch.full((2, 2), 7))
    same(torch.arange(5, device="gcu"), torch.arange(5))
    same(torch.eye(3, device="gcu"), torch.eye(3))
    same(torch.tensor([1.5, 2.5], device="gcu"), torch.tensor([1.5, 2.5]))
    same(torch.empty(0, device="gcu"), torch.empty(0))
    same(torch.zeros_like(torch.ones(2, device="gcu")), torch.zeros(2))
    torch.manual_seed(3)
    r = torch.randn(5, device="gcu")
    torch.manual_seed(3)
    same(r, torch.randn(5))  # random ops draw from the CPU generator


@check
def noncontiguous_copies():
    base = torch.arange(48, dtype=torch.float32).reshape(6, 8)
    g = base.to("gcu")
    # device -> host from non-contiguous views
    same(g.t(), base.t())
    same(g[:, 1::3], base[:, 1::3])
    same(g[2:5, 3], base[2:5, 3])
    same(g.t()[1:, ::2].contiguous(), base.t()[1:, ::2].contiguous())
    same(g.permute(1, 0).reshape(-1), base.permute(1, 0).reshape(-1))
    same(g[:, :1].expand(6, 5), base[:, :1].expand(6, 5))
    # host -> device into non-contiguous destinations; the gaps keep their values
    d = torch.zeros(6, 8, device="gcu")
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
    e = torch.zeros(8, 6, device="gcu")
    e.copy_(d.t())
    same(e, ref.t())
    e[::2, 1:4] = d[1:5, ::2][:, :3]
    r2 = ref.t().clone()
    r2[::2, 1:4] = ref[1:5, ::2][:, :3]
    same(e, r2)
    # dtype conversion and broadcasting in copy_
    i = torch.zeros(3, 4, dtype=torch.int64, device="gcu")
    i.copy_(torch.tensor([1.7, 2.2, 3.9, -4.5]))
    same(i, torch.tensor([1.7, 2.2, 3.9, -4.5]).to(torch.int64).expand(3, 4))
    f = torch.zeros(2, 3, dtype=torch.float64, device="gcu")
    f.copy_(torch.tensor([[1], [2]], dtype=torch.int32, device="gcu"))
    same(f, torch.tensor([[1.0, 1, 1], [2, 2, 2]], dtype=torch.float64))
    # channels_last (dense, not contiguous) both ways
    cl = torch.randn(2, 3, 4, 5).contiguous(memory_format=torch.channels_last)
    gcl = cl.to("gcu")
    assert gcl.is_contiguous(memory_format=torch.channels_last)
    same(gcl, cl)
    same(gcl.contiguous(), cl.contiguous())
    # conjugate and negative views
    z = torch.complex(torch.arange(4.0), torch.arange(4.0) + 1)
    gz = z.to("gcu")
    same(gz.conj(), z.conj().resolve_conj())
    gz2 = torch.zeros(4, dtype=torch.complex64, device="gcu")
    gz2.conj().copy_(z)
    same(gz2, z.conj().resolve_conj())


@check
def views_alias_device_memory():
    g = torch.zeros(3, 4, device="gcu")
    v = g.view(-1)
    v[5] = 7.0
    assert g[1, 1].item() == 7.0
    g.t()[2, 0] = 3.0
    assert g[0, 2].item() == 3.0
    g.unsqueeze(0).squeeze(0)[2].fill_(1.0)
    same(g[2], torch.ones(4))
    g.narrow(1, 3, 1).zero_()
    assert g[:, 3].abs().sum().item() == 0.0
    u = torch.arange(10.0, device="gcu").unfold(0, 4, 3)
    same(u, torch.arange(10.0).unfold(0, 4, 3))
    z = torch.zeros(3, dtype=torch.complex64, device="gcu")
    torch.view_as_real(z)[:, 1] = 2.0
    same(z, torch.full((3,), 2j, dtype=torch.complex64))
    same(torch.view_as_complex(torch.ones(2, 2, device="gcu")), torch.full((2,), 1 + 1j))
    r = torch.arange(12.0, device="gcu").reshape(3, 4)
    assert r.reshape(4, 3).data_ptr() == r.data_ptr()
    a, b = torch.arange(6.0, device="gcu").split(3)
    b.add_(10)
    same(b, torch.tensor([13.0, 14, 15]))
    same(r.as_strided((2, 2), (1, 4), 1),
         torch.arange(12.0).reshape(3, 4).as_strided((2, 2), (1, 4), 1))
    same(r.view(torch.int32).view(torch.float32), torch.arange(12.0).reshape(3, 4))


@check
def resize_and_set():
    t = torch.arange(4.0, device="gcu")
    ptr = t.data_ptr()
    t.resize_(2)
    assert t.data_ptr() == ptr
    same(t, torch.tensor([0.0, 1.0]))
    t.resize_(10)  # grows the storage: the old contents move device-to-device
    same(t[:4], torch.arange(4.0))
    s = torch.empty(0, device="gcu")
    s.set_(t.untyped_storage(), 1, (2, 1), (1, 1))
    same(s, torch.tensor([[1.0], [2.0]]))
    s2 = torch.empty(0, device="gcu").set_(t)
    assert s2.data_ptr() == t.data_ptr()
    o = torch.empty(0, device="gcu")
    torch.add(torch.ones(3, device="gcu"), 1, out=o)  # out= resizes through the fallback
    same(o, torch.full((3,), 2.0))
    st = torch.arange(3.0, device="gcu").untyped_storage()
    st.resize_(24)  # storage resize (PrivateUse1 hook)
    assert st.nbytes() == 24
    e = torch.empty(0, device="gcu").set_()
    assert e.numel() == 0 and e.device.type == "gcu"


@check
def ops_through_fallback():
    a = torch.randn(4, 5)
    b = torch.randn(5, 3)
    ga, gb = a.to("gcu"), b.to("gcu")
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
    same(ga[idx.to("gcu")], a[idx])
    h = ga.clone()
    h[idx.to("gcu")] = 0.0
    ah = a.clone()
    ah[idx] = 0.0
    same(h, ah)
    same(ga.sort(1).values, a.sort(1).values)
    same(torch.nonzero(ga > 0), torch.nonzero(a > 0))
    assert torch.equal(ga, ga.clone()) and not torch.equal(ga, ga + 1)
    ga.mul_(2).add_(1)
    same(ga, a * 2 + 1, 1e-6)
    l = [torch.ones(3, device="gcu"), torch.zeros(2, device="gcu")]
    torch._foreach_add_(l, 2.0)
    torch._foreach_mul_(l, [torch.full((3,), 3.0, device="gcu"), torch.ones(2, device="gcu")])
    same(l[0], torch.full((3,), 9.0))
    same(l[1], torch.full((2,), 2.0))
    n = torch._foreach_norm(l)
    same(n[0], torch.tensor(9.0 * 3 ** 0.5), 1e-5)


@check
def autograd():
    w = torch.randn(3, 2, device="gcu", requires_grad=True)
    x = torch.randn(4, 3, device="gcu")
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
        g, c = fwd_bwd(make, x, "gcu"), fwd_bwd(make, x, "cpu")
        assert torch.allclose(g, c, rtol=1e-4, atol=1e-4), (name, (g - c).abs().max())


@check
def autocast():
    a, b = torch.randn(4, 4), torch.randn(4, 4)
    ga, gb = a.to("gcu"), b.to("gcu")
    with torch.autocast("gcu", dtype=torch.bfloat16):
        y = ga @ gb
        s = torch.softmax(y, 1)
    assert y.dtype == torch.bfloat16 and y.device.type == "gcu", y
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
        lg, pg = train("gcu", 15, make)
        lc, pc = train("cpu", 15, make)
        assert lg[-1] < lg[0] * 0.8, (name, lg)
        for a, b in zip(lg, lc):
            assert abs(a - b) <= 1e-5 * max(1.0, abs(b)), (name, lg, lc)
        for a, b in zip(pg, pc):
            same(a, b, 1e-5)


@check
def module_methods_and_serialization():
    m = torch.nn.Linear(3, 2)
    m.gcu()
    assert m.weight.device.type == "gcu"
    t = torch.ones(2).gcu()
    assert t.device.type == "gcu"
    sd = copy.deepcopy(m.state_dict())
    assert sd["weight"].device.type == "gcu"
    same(sd["weight"], m.weight.detach())
    buf = io.BytesIO()
    torch.save(m.state_dict(), buf)
    buf.seek(0)
    loaded = torch.load(buf)
    assert loaded["weight"].device.type == "gcu"
    same(loaded["weight"], m.weight.detach())
    buf.seek(0)
    same(torch.load(buf, map_location="cpu")["bias"], m.bias.detach().cpu())


@check
def multi_device():
    n = torch.gcu.device_count()
    if n < 2:
        print("  (one device: skipped)")
        return
    x = torch.arange(6.0).reshape(2, 3)
    g0 = x.to("gcu:0")
    g1 = g0.to("gcu:1")
    assert g1.device == torch.device("gcu", 1)
    same(g1, x)
    same(g1 * 2, x * 2)
    assert (g1 * 2).device == torch.device("gcu", 1)
    same(g1.t().to("gcu:0"), x.t())
    with torch.gcu.device(1):
        assert torch.gcu.current_device() == 1
        y = torch.ones(2, device="gcu")
        assert y.device.index == 1
        assert torch.gcu.current_stream().device.index == 1
        torch.gcu.synchronize()
    assert torch.gcu.current_device() == 0
    torch.gcu.set_device(1)
    assert torch.gcu.current_device() == 1
    torch.gcu.set_device("gcu:0")
    assert torch.gcu.current_device() == 0
    w = torch.randn(3, 2, device="gcu:1", requires_grad=True)
    (w * 2).sum().backward()
    same(w.grad, torch.full((3, 2), 2.0, device="gcu:1"))


@check
def events_and_pinned_memory():
    e = torch.Event(device="gcu")
    torch.ones(3, device="gcu").add_(1)
    e.record()
    e.synchronize()
    assert e.query()
    s = torch.accelerator.current_stream()  # the default stream, via the device guard
    assert s.device == torch.device("gcu", torch.gcu.current_device()) and s.stream_id == 0
    assert s.query()
    s.synchronize()
    assert e.query() and s.query()
    s.wait_event(e)
    e2 = s.record_event()
    e2.synchronize()
    p = torch.arange(4.0).pin_memory()
    assert p.is_pinned() and not torch.arange(4.0).is_pinned()
    same(p.to("gcu", non_blocking=True), torch.arange(4.0))


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
