"""The torch collectives under torch.compile (horovod_accel/torch/custom_ops.py):
every op and its async/in-place forms trace with no graph break, compile
with fullgraph=True, and give the eager results and gradients; a compiled
step does not recompile across calls; errors keep their eager types and
messages. Most checks use the aot_eager backend (the traced graph run
without code generation: what it checks is the tracing); one uses inductor.
"""
import torch
import torch._dynamo

import horovod.torch as hvd
from _common import check, check_equal, expect_raises, run


def data(shape, dtype=torch.float32, shift=0):
    """A tensor that differs per rank (exact in every dtype used here)."""
    n = int(torch.Size(shape).numel())
    v = (torch.arange(n) * 3 + 7 * hvd.rank() + shift) % 11 - 5
    return v.reshape(shape).to(dtype)


def results(out):
    """An op's result as a flat list of tensors (tensor, list or tuple)."""
    if isinstance(out, torch.Tensor):
        return [out]
    return [t for o in out for t in results(o)]


def assert_traces_like_eager(what, fn, *args):
    """fn traces into one graph with no break, compiles with fullgraph=True,
    and its compiled results equal the eager ones."""
    explained = torch._dynamo.explain(fn)(*args)
    check(explained.graph_break_count == 0 and explained.graph_count == 1,
          f"{what}: {explained.graph_count} graphs, breaks: "
          f"{[str(b.reason)[:300] for b in explained.break_reasons]}")
    compiled = torch.compile(fn, fullgraph=True, backend="aot_eager")
    got, want = results(compiled(*args)), results(fn(*args))
    check(len(got) == len(want), f"{what}: {len(got)} results, want {len(want)}")
    for i, (g, w) in enumerate(zip(got, want)):
        check_equal(g, w, f"{what} result {i}")


def test_every_op_traces_and_matches_eager():
    r, n = hvd.rank(), hvd.size()
    x = data((2 * n, 3))
    odd = data((2 * n + 1, 2))  # reducescatter: uneven shares
    mine = data((r + 1, 2))     # allgather: dim 0 differs per rank
    splits = [(q + r) % 3 for q in range(n)]
    rows = data((sum(splits), 2))
    cases = {
        "allreduce": lambda x: hvd.allreduce(x, name="ar") * 2,
        "allreduce Sum, scaled": lambda x: hvd.allreduce(x, op=hvd.Sum, prescale_factor=2.0,
                                                         postscale_factor=0.5),
        "allreduce unnamed twice": lambda x: hvd.allreduce(x) + hvd.allreduce(x, op=hvd.Max),
        "allreduce fp16 compression": lambda x: hvd.allreduce(
            x, name="fp16", compression=hvd.Compression.fp16),
        "allreduce_": lambda x: hvd.allreduce_(x.clone(), op=hvd.Sum),
        "allreduce_async": lambda x: hvd.synchronize(hvd.allreduce_async(x, name="aa")) + 1,
        "allreduce_async_": lambda x: hvd.synchronize(hvd.allreduce_async_(x.clone())),
        "two async in flight": lambda x: [hvd.synchronize(h) for h in
                                          [hvd.allreduce_async(x, name="f1"),
                                           hvd.allreduce_async(x * 2, name="f2")]],
        "grouped_allreduce": lambda x: hvd.grouped_allreduce([x, x[0]], op=hvd.Sum),
        "grouped_allreduce_": lambda x: hvd.grouped_allreduce_([x.clone(), x[1:].clone()]),
        "grouped_allreduce_async": lambda x: hvd.synchronize(
            hvd.grouped_allreduce_async([x, x + 1], name="ga")),
        "grouped_allreduce_async_": lambda x: hvd.synchronize(
            hvd.grouped_allreduce_async_([x.clone()])),
        "grouped_allreduce empty": lambda x: hvd.grouped_allreduce([]) + [x * 2],
        "broadcast": lambda x: hvd.broadcast(x, root_rank=n - 1, name="bc"),
        "broadcast_": lambda x: hvd.broadcast_(x.clone(), root_rank=0),
        "broadcast_async": lambda x: hvd.synchronize(hvd.broadcast_async(x, 0)),
        "broadcast_async_": lambda x: hvd.synchronize(hvd.broadcast_async_(x.clone(), n - 1)),
        "alltoall equal": lambda x: hvd.alltoall(x, name="a2a"),
        "alltoall_async": lambda x: hvd.synchronize(hvd.alltoall_async(x)),
        "reducescatter": lambda x: hvd.reducescatter(x, op=hvd.Sum),
        "reducescatter_async": lambda x: hvd.synchronize(hvd.reducescatter_async(x)),
        "grouped_reducescatter": lambda x: hvd.grouped_reducescatter([x, x * 3]),
        "grouped_reducescatter_async": lambda x: hvd.synchronize(
            hvd.grouped_reducescatter_async([x], op=hvd.Sum)),
        "rank and size": lambda x: hvd.allreduce(x * hvd.rank(), op=hvd.Sum) / hvd.size(),
    }
    for what, fn in cases.items():
        assert_traces_like_eager(what, fn, x)
    assert_traces_like_eager("reducescatter uneven", lambda t: hvd.reducescatter(t), odd)
    assert_traces_like_eager("allgather", lambda t: hvd.allgather(t, name="ag"), mine)
    assert_traces_like_eager("allgather_async", lambda t: hvd.synchronize(hvd.allgather_async(t)),
                             mine)
    assert_traces_like_eager("grouped_allgather", lambda t: hvd.grouped_allgather([t, t[:1]]),
                             mine)
    assert_traces_like_eager("grouped_allgather_async",
                             lambda t: hvd.synchronize(hvd.grouped_allgather_async([t])), mine)
    assert_traces_like_eager("alltoall list splits",
                             lambda t: hvd.alltoall(t, splits=splits, name="a2s"), rows)
    assert_traces_like_eager("alltoall tensor splits",
                             lambda t, s: hvd.alltoall(t, splits=s), rows,
                             torch.tensor(splits, dtype=torch.int64))
    for dtype in (torch.int32, torch.bfloat16, torch.float64, torch.uint8):
        assert_traces_like_eager(f"allreduce {dtype}", lambda t: hvd.allreduce(t, op=hvd.Sum),
                                 data((5,), dtype).abs() if dtype == torch.uint8
                                 else data((5,), dtype))
    assert_traces_like_eager("zero-length", lambda t: hvd.allreduce(t), torch.ones(0, 3))


def test_in_place_forms_write_their_argument():
    def step(x):
        y = x.clone()
        hvd.synchronize(hvd.allreduce_async_(y, op=hvd.Sum))
        return y
    x = data((4,))
    want = hvd.allreduce(x, op=hvd.Sum)
    check_equal(torch.compile(step, fullgraph=True, backend="aot_eager")(x), want,
                "allreduce_async_ result lands in its argument")


def test_poll_of_a_traced_handle():
    # A bool tensor (whether the op had completed when the graph ran: either
    # value is right); the handle still synchronizes afterwards.
    def step(x):
        h = hvd.allreduce_async(x, op=hvd.Sum, name="polled")
        done = hvd.poll(h)
        return hvd.synchronize(h), done
    x = data((3,))
    out, done = torch.compile(step, fullgraph=True, backend="aot_eager")(x)
    check(done.dtype == torch.bool and done.dim() == 0, f"poll gave {done!r}, want a bool scalar")
    check_equal(out, hvd.allreduce(x, op=hvd.Sum), "synchronize after poll")


def test_inductor_compiles_collectives():
    # The default backend: collectives stay extern calls between generated
    # kernels; values equal eager within float rounding of the fused code.
    def step(x):
        h = hvd.allreduce_async(x * 2, name="ind.async")
        g = hvd.allgather(x.sin(), name="ind.ag")
        s = hvd.reducescatter(x + 1, op=hvd.Sum)
        return hvd.synchronize(h) + 1, g.sum(0), s * 3
    x = data((2 * hvd.size(), 3))
    got = torch.compile(step, fullgraph=True)(x)
    for i, (g, w) in enumerate(zip(got, step(x))):
        check_equal(g, w, f"inductor result {i}", atol=1e-5)


def _grads(fn, inputs):
    inputs = [t.detach().clone().requires_grad_() for t in inputs]
    fn(*inputs).backward()
    return [t.grad for t in inputs]


def test_gradients_match_eager():
    r, n = hvd.rank(), hvd.size()
    x = data((2 * n, 3), torch.float64, shift=1)
    w = data((2 * n, 3), torch.float64, shift=5)
    mine = data((r + 1, 3), torch.float64)
    total = n * (n + 1) // 2
    gw = data((total, 3), torch.float64, shift=2)
    splits = [(q + r) % 3 + 1 for q in range(n)]
    rows = data((sum(splits), 3), torch.float64)
    cases = [
        ("allreduce", lambda t: (hvd.allreduce(t, op=hvd.Sum, prescale_factor=2.0) * w).sum(), [x]),
        ("allreduce Average", lambda t: (hvd.allreduce(t) * w).sum(), [x]),
        ("grouped_allreduce",
         lambda a, b: sum((y * y).sum() for y in hvd.grouped_allreduce([a, b])),
         [x, x[0]]),
        ("allgather", lambda t: (hvd.allgather(t) * gw).sum(), [mine]),
        ("grouped_allgather", lambda t: sum((y * gw).sum() for y in hvd.grouped_allgather([t, t])),
         [mine]),
        ("broadcast", lambda t: (hvd.broadcast(t, root_rank=n - 1) * w).sum(), [x]),
        ("alltoall", lambda t: (hvd.alltoall(t, splits=splits)[0] ** 2).sum(), [rows]),
        ("reducescatter", lambda t: (hvd.reducescatter(t) ** 2).sum(), [x]),
        ("grouped_reducescatter",
         lambda t: sum((y ** 2).sum() for y in hvd.grouped_reducescatter([t, 2 * t], op=hvd.Sum)),
         [x]),
    ]
    for what, fn, inputs in cases:
        compiled = torch.compile(fn, fullgraph=True, backend="aot_eager")
        for i, (g, e) in enumerate(zip(_grads(compiled, inputs), _grads(fn, inputs))):
            check_equal(g, e, f"{what}: gradient {i}", atol=1e-12)


def test_sync_batch_norm_compiles():
    torch.manual_seed(0)
    eager = hvd.SyncBatchNorm(3)
    compiled_bn = hvd.SyncBatchNorm(3)
    compiled = torch.compile(compiled_bn, fullgraph=True, backend="aot_eager")
    for step in range(2):
        x = data((hvd.rank() + 2, 3, 4), torch.float32, shift=step)
        xe, xc = x.clone().requires_grad_(), x.clone().requires_grad_()
        ye, yc = eager(xe), compiled(xc)
        (ye * ye).sum().backward()
        (yc * yc).sum().backward()
        check_equal(yc, ye, f"SyncBatchNorm step {step} output", atol=1e-5)
        check_equal(xc.grad, xe.grad, f"SyncBatchNorm step {step} input grad", atol=1e-5)
    check_equal(compiled_bn.running_var, eager.running_var, "SyncBatchNorm running_var", atol=1e-6)
    check_equal(compiled_bn.weight.grad, eager.weight.grad, "SyncBatchNorm weight grad", atol=1e-4)


def test_no_recompilation_across_steps():
    graphs = []

    def count(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def step(x, scale):
        a = hvd.allreduce(x * scale)                    # unnamed: numbered when it runs
        h = hvd.allreduce_async(x, name="step.named")   # named: the same name every step
        b = hvd.allgather(x)
        return a + hvd.synchronize(h), b

    compiled = torch.compile(step, backend=count)
    for i in range(6):
        x = data((4, 2), shift=i)
        got, want = compiled(x, torch.tensor(float(i))), step(x, torch.tensor(float(i)))
        for g, w in zip(got, want):
            check_equal(g, w, f"step {i}")
    check(len(graphs) == 1, f"compiled {len(graphs)} times over 6 steps, want once")


def test_errors_keep_their_types_and_messages():
    n = hvd.size()
    c = lambda fn: torch.compile(fn, backend="aot_eager")  # noqa: E731
    complex_input = torch.ones(2, dtype=torch.complex64)
    expect_raises(ValueError, lambda: c(lambda x: hvd.allreduce(x))(complex_input),
                  "unsupported dtype", match="not supported")
    expect_raises(ValueError, lambda: c(lambda x: hvd.alltoall(x))(torch.ones(n + 1)) if n > 1
                  else (_ for _ in ()).throw(ValueError("divisible")),
                  "alltoall rows not divisible", match="divisible")
    unregistered = hvd.ProcessSet([0])
    expect_raises(ValueError, lambda: c(lambda x: hvd.allreduce(x, process_set=unregistered))(
        torch.ones(2)), "unregistered process set", match="not registered")
    if n > 1:
        # A cross-rank mismatch: the named HorovodInternalError, raised
        # out of the compiled graph on every rank.
        shape = (hvd.rank() + 1,)
        expect_raises(hvd.HorovodInternalError,
                      lambda: c(lambda x: hvd.allreduce(x, name="mismatch"))(torch.ones(shape)),
                      "shape mismatch", match="mismatch")
    check_equal(c(lambda x: hvd.allreduce(x, op=hvd.Sum))(torch.ones(2)),
                torch.full((2,), float(n)),
                "the job still works after the errors")


def test_process_set_and_a_new_job():
    """Compiled collectives on a process set of all ranks but the last; and a
    new job (shutdown, init) recompiles what was compiled before it (the
    graphs held the old job's rank, size and set ids)."""
    r, n = hvd.rank(), hvd.size()
    graphs = []

    def count(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    per_rank = torch.compile(lambda x: hvd.allreduce(x, op=hvd.Sum) * hvd.rank(), backend=count)
    per_rank(torch.ones(2))
    hvd.shutdown()
    if n > 1:
        ps = hvd.ProcessSet(list(range(n - 1)))
        hvd.init(process_sets=[ps])
    else:    # a set of every rank is the global set
        ps = hvd.global_process_set
        hvd.init()
    check_equal(per_rank(torch.ones(2)), torch.full((2,), float(n * r)), "after re-init")
    check(len(graphs) == 2, f"{len(graphs)} compilations across a new job, want 2")
    if not ps.included():
        return
    m, k = ps.size(), ps.rank()
    x = data((2 * m + 1, 2))

    def on_set(t):
        s = hvd.allreduce(t, op=hvd.Sum, process_set=ps, name="ps.ar")
        g = hvd.allgather(t[:k + 1], process_set=ps)
        b = hvd.broadcast(t, root_rank=m - 1, process_set=ps)
        rs = hvd.reducescatter(t, op=hvd.Sum, process_set=ps)
        return s, g, b, rs, hvd.synchronize(hvd.allreduce_async(t, process_set=ps))

    assert_traces_like_eager("ops on a process set", on_set, x)


if __name__ == "__main__":
    run([test_every_op_traces_and_matches_eager, test_in_place_forms_write_their_argument,
         test_gradients_match_eager, test_sync_batch_norm_compiles,
         test_no_recompilation_across_steps, test_errors_keep_their_types_and_messages,
         test_poll_of_a_traced_handle, test_inductor_compiles_collectives,
         test_process_set_and_a_new_job])
