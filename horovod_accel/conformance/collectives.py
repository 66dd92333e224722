"""What each conformance case runs and checks: one function per collective
(and the grouped and batch forms), called by the matrix in cases.py on the
members of the case's process set with run_suite.py's Ctx. Each returns
a list of problems (empty: passed); exceptions propagate to run_suite.py.
Inputs come from values.py, expectations from expect.py; collectives meet
by the names `conf.<case index>[.<k>]`.
"""
import torch

from horovod_accel.conformance import expect as E
from horovod_accel.conformance.values import (DTYPE_NAMES, MOVE_DTYPES, REDUCE_DTYPES,
                                              movement_input, reduce_input)


def _name(case, k=None):
    return f"conf.{case.index}" if k is None else f"conf.{case.index}.{k}"


def _shape(n, row_shape=()):
    return (n, *row_shape)


def _add(problems, problem, prefix=""):
    if problem:
        problems.append(prefix + problem)


def _same_object(problems, got, x, fn_name):
    if got is not x:
        problems.append(f"{fn_name} did not return its argument (got {type(got).__name__})")


# ---------------------------------------------------------------- allreduce


def _reduce_inputs(case, members, dtype, shape, op, scaled, seed=None):
    kind = "product" if op == E.PRODUCT else "sum"
    seed = case.seed if seed is None else seed
    return [reduce_input(dtype, shape, r, seed, len(members), kind, scaled) for r in members]


def _run_variant(ctx, base, variant, args, kw, problems):
    """hvd.<variant>(*args, **kw) for variant in base, base_, base_async and
    base_async_: async forms are waited for, in-place forms must return their
    input (args[0])."""
    if variant not in (base, base + "_", base + "_async", base + "_async_"):
        raise ValueError(variant)
    out = getattr(ctx.hvd, variant)(*args, **kw)
    if "_async" in variant:
        out = ctx.wait(out, problems)
    if variant.endswith("_"):
        _same_object(problems, out, args[0], variant)
    return out


def _check_output_and_input(ctx, problems, variant, out, exp, x, original):
    """out equals exp; an out-of-place op left its input x (made from original) unchanged."""
    _add(problems, E.compare(out, exp, ctx.device))
    if not variant.endswith("_"):
        _add(problems, E.compare(x, E.movement(original), ctx.device, "input (must be unchanged)"))


def run_allreduce(ctx, case, op, dtype, shape, pre=1.0, post=1.0, variant="allreduce"):
    members = ctx.members(case)
    me = members.index(ctx.rank)
    inputs = _reduce_inputs(case, members, dtype, shape, op, (pre, post) != (1.0, 1.0))
    exp = ctx.corrupt(case, E.reduce_expected(inputs, op, pre, post))
    x = ctx.to_device(inputs[me])
    kw = dict(name=_name(case), op=ctx.op_map[op], prescale_factor=pre, postscale_factor=post,
              process_set=ctx.ps(case))
    problems = []
    out = _run_variant(ctx, "allreduce", variant, (x,), kw, problems)
    _check_output_and_input(ctx, problems, variant, out, exp, x, inputs[me])
    return problems


def run_grouped_allreduce(ctx, case, op, dtypes, shapes, pre=1.0, post=1.0,
                          variant="grouped_allreduce"):
    hvd, members = ctx.hvd, ctx.members(case)
    me = members.index(ctx.rank)
    scaled = (pre, post) != (1.0, 1.0)
    per_tensor = [_reduce_inputs(case, members, d, s, op, scaled, seed=case.seed + i)
                  for i, (d, s) in enumerate(zip(dtypes, shapes))]
    exps = [E.reduce_expected(inputs, op, pre, post) for inputs in per_tensor]
    xs = [ctx.to_device(inputs[me]) for inputs in per_tensor]
    kw = dict(name=_name(case), op=ctx.op_map[op], prescale_factor=pre, postscale_factor=post,
              process_set=ctx.ps(case))
    problems = []
    if variant == "grouped_allreduce":
        outs = hvd.grouped_allreduce(xs, **kw)
    elif variant == "grouped_allreduce_":
        outs = hvd.grouped_allreduce_(xs, **kw)
    elif variant == "grouped_allreduce_async":
        outs = ctx.wait(hvd.grouped_allreduce_async(xs, **kw), problems)
    else:
        raise ValueError(variant)
    if not isinstance(outs, (list, tuple)) or len(outs) != len(xs):
        return problems + [f"{variant} returned {type(outs).__name__}"
                           f"{'' if not hasattr(outs, '__len__') else f' of length {len(outs)}'}, "
                           f"expected a list of {len(xs)} tensors"]
    for i, (out, x, exp, inputs) in enumerate(zip(outs, xs, exps, per_tensor)):
        if variant.endswith("_"):
            _same_object(problems, out, x, f"{variant} tensor #{i}")
        _add(problems, E.compare(out, exp, ctx.device, f"tensor #{i}"))
        if not variant.endswith("_"):
            _add(problems, E.compare(x, E.movement(inputs[me]), ctx.device,
                                     f"input #{i} (must be unchanged)"))
    return problems


# ---------------------------------------------------------------- allgather


def allgather_rows(n, members, j):
    """Rows contributed by set rank j: uneven (n + j), with the middle set
    rank contributing none (when the set has 2+ ranks); none at all for n=0."""
    if n == 0 or (len(members) > 1 and j == len(members) // 2):
        return 0
    return n + j


def run_allgather(ctx, case, dtype, n, row_shape=(), variant="allgather", seed=None, k=None):
    members = ctx.members(case)
    me = members.index(ctx.rank)
    seed = case.seed if seed is None else seed
    inputs = [movement_input(dtype, _shape(allgather_rows(n, members, j), row_shape), r, seed)
              for j, r in enumerate(members)]
    exp = E.movement(torch.cat(inputs))
    x = ctx.to_device(inputs[me])
    problems = []
    kw = dict(name=_name(case, k), process_set=ctx.ps(case))
    out = _run_variant(ctx, "allgather", variant, (x,), kw, problems)
    _check_output_and_input(ctx, problems, variant, out, exp, x, inputs[me])
    return problems


def run_grouped_allgather(ctx, case, dtype, ns):
    """grouped_allgather of one tensor per count in ns (uneven rows as in
    run_allgather)."""
    hvd, members = ctx.hvd, ctx.members(case)
    me = members.index(ctx.rank)
    per_tensor = [[movement_input(dtype, (allgather_rows(n, members, j),), r, case.seed + i)
                   for j, r in enumerate(members)] for i, n in enumerate(ns)]
    xs = [ctx.to_device(inputs[me]) for inputs in per_tensor]
    outs = hvd.grouped_allgather(xs, name=_name(case), process_set=ctx.ps(case))
    if not isinstance(outs, (list, tuple)) or len(outs) != len(xs):
        return [f"grouped_allgather returned {type(outs).__name__}, expected a list of "
                f"{len(xs)} tensors"]
    problems = []
    for i, (out, inputs) in enumerate(zip(outs, per_tensor)):
        _add(problems, E.compare(out, E.movement(torch.cat(inputs)), ctx.device, f"tensor #{i}"))
    return problems


# ---------------------------------------------------------------- broadcast


def run_broadcast(ctx, case, dtype, n, root, variant="broadcast"):
    members = ctx.members(case)
    me = members.index(ctx.rank)
    inputs = [movement_input(dtype, (n,), r, case.seed) for r in members]
    exp = E.movement(inputs[members.index(root)])
    x = ctx.to_device(inputs[me])
    kw = dict(name=_name(case), process_set=ctx.ps(case))
    problems = []
    out = _run_variant(ctx, "broadcast", variant, (x, root), kw, problems)
    _check_output_and_input(ctx, problems, variant, out, exp, x, inputs[me])
    return problems


# ---------------------------------------------------------------- alltoall


def alltoall_splits(n, set_size, i, j):
    """Rows set rank i sends to set rank j: about n // size, uneven, with
    zeros (every third (i, j) pair); all zero for n=0."""
    if n == 0 or (i + 2 * j) % 3 == 0:
        return 0
    return max(1, n // set_size) + (i + j) % 3


def run_alltoall(ctx, case, dtype, n, splits, row_shape=(), variant="alltoall"):
    """splits: None (equal split: n rows to every rank), 'tensor' (an int32
    tensor) or 'list'."""
    hvd, members = ctx.hvd, ctx.members(case)
    size = len(members)
    me = members.index(ctx.rank)
    if splits is None:
        sp = [[n] * size for _ in range(size)]
    else:
        sp = [[alltoall_splits(n, size, i, j) for j in range(size)] for i in range(size)]
    inputs = [movement_input(dtype, _shape(sum(sp[i]), row_shape), r, case.seed)
              for i, r in enumerate(members)]
    blocks = [inputs[i].narrow(0, sum(sp[i][:me]), sp[i][me]) for i in range(size)]
    exp = E.movement(torch.cat(blocks))
    want_received = [sp[i][me] for i in range(size)]
    x = ctx.to_device(inputs[me])
    arg = None
    if splits == "tensor":
        arg = torch.tensor(sp[me], dtype=torch.int32)
    elif splits == "list":
        arg = list(sp[me])
    kw = dict(name=_name(case), process_set=ctx.ps(case))
    problems = []
    received = None
    if variant == "alltoall":
        res = hvd.alltoall(x, arg, **kw)
        if splits is None:
            out = res
        elif isinstance(res, tuple) and len(res) == 2:
            out, received = res
        else:
            return [f"alltoall with splits returned {type(res).__name__}, expected "
                    f"(output, received_splits)"]
    elif variant == "alltoall_async":
        res = ctx.wait(hvd.alltoall_async(x, arg, **kw), problems)
        if not (isinstance(res, tuple) and len(res) == 2):
            return problems + [f"synchronize(alltoall_async) returned {type(res).__name__}, "
                               f"expected (output, received_splits)"]
        out, received = res
    else:
        raise ValueError(variant)
    _add(problems, E.compare(out, exp, ctx.device))
    if received is not None:
        if not isinstance(received, torch.Tensor):
            problems.append(f"received_splits is a {type(received).__name__}, expected a tensor")
        elif received.dtype != torch.int32 or received.cpu().tolist() != want_received:
            problems.append(f"received_splits {received.cpu().tolist()} "
                            f"({str(received.dtype).replace('torch.', '')}), expected "
                            f"{want_received} (int32)")
    _add(problems, E.compare(x, E.movement(inputs[me]), ctx.device, "input (must be unchanged)"))
    return problems


# ---------------------------------------------------------------- reducescatter


def scatter_rows(d0, set_size, j):
    """(first row, rows) set rank j receives: d0 // size rows, one more for
    the lowest d0 % size ranks (upstream's split)."""
    counts = [d0 // set_size + (1 if q < d0 % set_size else 0) for q in range(set_size)]
    return sum(counts[:j]), counts[j]


def run_reducescatter(ctx, case, op, dtype, n, row_shape=(), pre=1.0, post=1.0,
                      variant="reducescatter"):
    members = ctx.members(case)
    me = members.index(ctx.rank)
    shape = _shape(n, row_shape)
    inputs = _reduce_inputs(case, members, dtype, shape, op, (pre, post) != (1.0, 1.0))
    start, rows = scatter_rows(n, len(members), me)
    exp = E.reduce_expected(inputs, op, pre, post).rows(start, rows)
    x = ctx.to_device(inputs[me])
    kw = dict(name=_name(case), op=ctx.op_map[op], process_set=ctx.ps(case),
              prescale_factor=pre, postscale_factor=post)
    problems = []
    out = _run_variant(ctx, "reducescatter", variant, (x,), kw, problems)
    _check_output_and_input(ctx, problems, variant, out, exp, x, inputs[me])
    return problems


def run_grouped_reducescatter(ctx, case, op, dtype, ns):
    """grouped_reducescatter of one (n, 2) tensor per count in ns."""
    hvd, members = ctx.hvd, ctx.members(case)
    me = members.index(ctx.rank)
    per_tensor = [_reduce_inputs(case, members, dtype, (n, 2), op, False, seed=case.seed + i)
                  for i, n in enumerate(ns)]
    xs = [ctx.to_device(inputs[me]) for inputs in per_tensor]
    outs = hvd.grouped_reducescatter(xs, name=_name(case), op=ctx.op_map[op],
                                     process_set=ctx.ps(case))
    if not isinstance(outs, (list, tuple)) or len(outs) != len(xs):
        return [f"grouped_reducescatter returned {type(outs).__name__}, expected a list of "
                f"{len(xs)} tensors"]
    problems = []
    for i, (out, inputs, n) in enumerate(zip(outs, per_tensor, ns)):
        exp = E.reduce_expected(inputs, op).rows(*scatter_rows(n, len(members), me))
        _add(problems, E.compare(out, exp, ctx.device, f"tensor #{i}"))
    return problems


# ---------------------------------------------------------------- barrier, batches


def run_barrier(ctx, case):
    res = ctx.hvd.barrier(process_set=ctx.ps(case))
    return [] if res is None else [f"barrier returned {res!r}, expected None"]


def run_allreduce_batch(ctx, case, counts):
    """Every dtype x count submitted at once (allreduce_async, Sum), then
    synchronized in reverse order: ops in flight together (fusion, out-of-order
    completion)."""
    hvd, members = ctx.hvd, ctx.members(case)
    me = members.index(ctx.rank)
    pending = []
    for k, (dtype, n) in enumerate((d, n) for d in REDUCE_DTYPES for n in counts):
        inputs = _reduce_inputs(case, members, dtype, (n,), E.SUM, False, seed=case.seed + k)
        x = ctx.to_device(inputs[me])
        h = hvd.allreduce_async(x, name=_name(case, k), op=hvd.Sum, process_set=ctx.ps(case))
        pending.append((f"{DTYPE_NAMES[dtype]}/n={n}: ", h, E.reduce_expected(inputs, E.SUM)))
    problems = []
    for prefix, h, exp in reversed(pending):
        _add(problems, E.compare(hvd.synchronize(h), exp, ctx.device), prefix)
    return problems


def run_allgather_batch(ctx, case, counts):
    """Every dtype x count allgathered at once (allgather_async), synchronized
    in reverse order."""
    hvd, members = ctx.hvd, ctx.members(case)
    me = members.index(ctx.rank)
    pending = []
    for k, (dtype, n) in enumerate((d, n) for d in MOVE_DTYPES for n in counts):
        inputs = [movement_input(dtype, (allgather_rows(n, members, j),), r, case.seed + k)
                  for j, r in enumerate(members)]
        x = ctx.to_device(inputs[me])
        h = hvd.allgather_async(x, name=_name(case, k), process_set=ctx.ps(case))
        pending.append((f"{DTYPE_NAMES[dtype]}/n={n}: ", h, E.movement(torch.cat(inputs)), x))
    problems = []
    for prefix, h, exp, x in reversed(pending):
        _add(problems, E.compare(hvd.synchronize(h), exp, ctx.device), prefix)
    return problems


# ---------------------------------------------------------------- the matrix
