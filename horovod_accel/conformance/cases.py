"""The case matrix and what each case runs and checks.

A case is one collective call (or a small group of them for the grouped and
batch cases) with a name that says what it covers:

    <op>/<reduce op>/<dtype>/n=<count>[/<variant>]/ps=<process set>

e.g. `allreduce/sum/float16/n=1031/ps=global`,
`broadcast_/int8/n=1/root=2/ps=0,3`, `alltoall/bool/n=0/splits=tensor/ps=1,2`.
`build_cases()` returns the same list, in the same order, on every rank (it
depends only on the options and the job's size), so collectives meet by the
names `conf.<case index>[.<k>]`.

A case function runs on the members of its process set and returns a list
of problems (empty: passed); exceptions propagate to the runner, which
records them. Inputs come from values.py, expectations from expect.py.
"""
import time
import zlib
from dataclasses import dataclass, field

import torch

from horovod_accel.conformance import expect as E
from horovod_accel.conformance.values import (DTYPE_NAMES, MOVE_DTYPES, REDUCE_DTYPES,
                                              movement_input, reduce_input)

PRIME = 1031
LARGE = 65537
COUNTS = [0, 1, PRIME, LARGE]
QUICK_COUNTS = [0, 1, PRIME]
REDUCE_OPS = [E.SUM, E.AVERAGE, E.MIN, E.MAX, E.PRODUCT]
SCALE = (0.5, 3.0)            # (prescale, postscale) of the scaled cases
SCALE_TAG = "scale=0.5x3"
ROW_SHAPE = (3, 2)            # row shape of the multi-dim (`x3x2`) cases
POLL_LIMIT_S = 10.0           # async: poll() must report completion within this

# The case whose expectation --self-test-fail corrupts on the last rank.
SELF_TEST_CASE = f"allreduce/sum/int32/n={PRIME}/ps=global"


@dataclass
class Case:
    name: str
    ps: str                    # process-set label: 'global' or the ranks, '0,3'
    fn: object                 # fn(ctx, case, **kw) -> list of problem strings
    kw: dict = field(default_factory=dict)
    index: int = -1

    @property
    def seed(self):
        return zlib.crc32(self.name.encode())


class Ctx:
    """What a case function needs: hvd, the device, the rank, the process
    sets ({label: (ProcessSet, [global ranks])}) and the self-test switch."""

    def __init__(self, hvd, device, process_sets, self_test_fail=False):
        self.hvd = hvd
        self.device = device
        self.rank = hvd.rank()
        self.size = hvd.size()
        self.process_sets = process_sets
        self.self_test_fail = self_test_fail
        self.op_map = {E.SUM: hvd.Sum, E.AVERAGE: hvd.Average, E.MIN: hvd.Min,
                       E.MAX: hvd.Max, E.PRODUCT: hvd.Product}

    def ps(self, case):
        return self.process_sets[case.ps][0]

    def members(self, case):
        return self.process_sets[case.ps][1]

    def is_member(self, case):
        return self.rank in self.members(case)

    def to_device(self, host):
        """A new tensor on the device under test holding `host`'s values."""
        t = torch.empty(host.shape, dtype=host.dtype, device=self.device)
        t.copy_(host)
        return t

    def corrupt(self, case, exp):
        """--self-test-fail: a wrong expectation on the last rank for one case."""
        if self.self_test_fail and case.name == SELF_TEST_CASE and self.rank == self.size - 1:
            return exp.corrupted()
        return exp

    def wait(self, handle, problems):
        """Polls an async handle until done (bounded), then synchronizes it."""
        deadline = time.monotonic() + POLL_LIMIT_S
        delay = 1e-5
        while not self.hvd.poll(handle):
            if time.monotonic() > deadline:
                problems.append(f"poll() did not report completion within {POLL_LIMIT_S:.0f} s")
                break
            time.sleep(delay)
            delay = min(delay * 2, 1e-3)
        return self.hvd.synchronize(handle)


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


def run_allreduce(ctx, case, op, dtype, shape, pre=1.0, post=1.0, variant="allreduce"):
    hvd, members = ctx.hvd, ctx.members(case)
    me = members.index(ctx.rank)
    inputs = _reduce_inputs(case, members, dtype, shape, op, (pre, post) != (1.0, 1.0))
    exp = ctx.corrupt(case, E.reduce_expected(inputs, op, pre, post))
    x = ctx.to_device(inputs[me])
    kw = dict(name=_name(case), op=ctx.op_map[op], prescale_factor=pre, postscale_factor=post,
              process_set=ctx.ps(case))
    problems = []
    if variant == "allreduce":
        out = hvd.allreduce(x, **kw)
    elif variant == "allreduce_":
        out = hvd.allreduce_(x, **kw)
        _same_object(problems, out, x, variant)
    elif variant == "allreduce_async":
        out = ctx.wait(hvd.allreduce_async(x, **kw), problems)
    elif variant == "allreduce_async_":
        out = ctx.wait(hvd.allreduce_async_(x, **kw), problems)
        _same_object(problems, out, x, variant)
    else:
        raise ValueError(variant)
    _add(problems, E.compare(out, exp, ctx.device))
    if not variant.endswith("_"):
        _add(problems, E.compare(x, E.movement(inputs[me]), ctx.device, "input (must be unchanged)"))
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
    hvd, members = ctx.hvd, ctx.members(case)
    me = members.index(ctx.rank)
    seed = case.seed if seed is None else seed
    inputs = [movement_input(dtype, _shape(allgather_rows(n, members, j), row_shape), r, seed)
              for j, r in enumerate(members)]
    exp = E.movement(torch.cat(inputs))
    x = ctx.to_device(inputs[me])
    problems = []
    kw = dict(name=_name(case, k), process_set=ctx.ps(case))
    if variant == "allgather":
        out = hvd.allgather(x, **kw)
    elif variant == "allgather_async":
        out = ctx.wait(hvd.allgather_async(x, **kw), problems)
    else:
        raise ValueError(variant)
    _add(problems, E.compare(out, exp, ctx.device))
    _add(problems, E.compare(x, E.movement(inputs[me]), ctx.device, "input (must be unchanged)"))
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
    hvd, members = ctx.hvd, ctx.members(case)
    me = members.index(ctx.rank)
    inputs = [movement_input(dtype, (n,), r, case.seed) for r in members]
    exp = E.movement(inputs[members.index(root)])
    x = ctx.to_device(inputs[me])
    kw = dict(name=_name(case), process_set=ctx.ps(case))
    problems = []
    if variant == "broadcast":
        out = hvd.broadcast(x, root, **kw)
    elif variant == "broadcast_":
        out = hvd.broadcast_(x, root, **kw)
        _same_object(problems, out, x, variant)
    elif variant == "broadcast_async":
        out = ctx.wait(hvd.broadcast_async(x, root, **kw), problems)
    elif variant == "broadcast_async_":
        out = ctx.wait(hvd.broadcast_async_(x, root, **kw), problems)
        _same_object(problems, out, x, variant)
    else:
        raise ValueError(variant)
    _add(problems, E.compare(out, exp, ctx.device))
    if not variant.endswith("_"):
        _add(problems, E.compare(x, E.movement(inputs[me]), ctx.device, "input (must be unchanged)"))
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
    hvd, members = ctx.hvd, ctx.members(case)
    me = members.index(ctx.rank)
    shape = _shape(n, row_shape)
    inputs = _reduce_inputs(case, members, dtype, shape, op, (pre, post) != (1.0, 1.0))
    start, rows = scatter_rows(n, len(members), me)
    exp = E.reduce_expected(inputs, op, pre, post).rows(start, rows)
    x = ctx.to_device(inputs[me])
    kw = dict(name=_name(case), op=ctx.op_map[op], process_set=ctx.ps(case),
              prescale_factor=pre, postscale_factor=post)
    problems = []
    if variant == "reducescatter":
        out = hvd.reducescatter(x, **kw)
    elif variant == "reducescatter_async":
        out = ctx.wait(hvd.reducescatter_async(x, **kw), problems)
    else:
        raise ValueError(variant)
    _add(problems, E.compare(out, exp, ctx.device))
    _add(problems, E.compare(x, E.movement(inputs[me]), ctx.device, "input (must be unchanged)"))
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


def _ps_label(ranks, size):
    return "global" if ranks == list(range(size)) else ",".join(map(str, ranks))


def process_set_ranks(size):
    """The process sets cases run on: the global set; 'tail' (ranks 1..size-1,
    registered dynamically after init) when size >= 2; 'ends' (ranks 0 and
    size-1, registered statically at init) when size >= 3.
    Returns [(label, ranks, how)] with how in {'global', 'dynamic', 'static'}."""
    sets = [("global", list(range(size)), "global")]
    if size >= 2:
        tail = list(range(1, size))
        sets.append((_ps_label(tail, size), tail, "dynamic"))
    if size >= 3:
        ends = [0, size - 1]
        sets.append((_ps_label(ends, size), ends, "static"))
    return sets


def build_cases(size, quick=False):
    """Every case, in run order, for a job of `size` ranks (the same list on
    every rank)."""
    counts = QUICK_COUNTS if quick else COUNTS
    dn = DTYPE_NAMES
    rows_tag = f"x{ROW_SHAPE[0]}x{ROW_SHAPE[1]}"
    group_shapes = [(0,), (1,), (PRIME,), (7, 5)]
    group_tag = f"n=0+1+{PRIME}+7x5"
    mixed = [torch.float32, torch.int32, torch.float16, torch.int64, torch.bfloat16]
    cases = []

    def add(name, ps, fn, **kw):
        cases.append(Case(f"{name}/ps={ps}", ps, fn, kw))

    # --quick: the variants (scaled, in-place, 0-d, grouped, async, batches,
    # multi-dim rows, list splits) on the global set only, and fewer of them;
    # counts 0, 1, 1031 on the global set and 0, 1031 on the others.
    variant_ops = [E.SUM] if quick else REDUCE_OPS
    scale_counts = [PRIME] if quick else counts
    for ps, ranks, _ in process_set_ranks(size):
        extras = not quick or ps == "global"
        if quick and ps != "global":
            counts = [0, PRIME]
        last = ranks[-1]

        # allreduce: every op x dtype x count; scaled Sum/Average; in-place;
        # a 0-d tensor; async forms.
        for op in REDUCE_OPS:
            for d in REDUCE_DTYPES:
                for n in counts:
                    add(f"allreduce/{op}/{dn[d]}/n={n}", ps, run_allreduce, op=op, dtype=d,
                        shape=(n,))
        if extras:
            for op in (E.SUM, E.AVERAGE):
                for d in REDUCE_DTYPES:
                    for n in scale_counts:
                        add(f"allreduce/{op}/{dn[d]}/n={n}/{SCALE_TAG}", ps, run_allreduce,
                            op=op, dtype=d, shape=(n,), pre=SCALE[0], post=SCALE[1])
            for op in variant_ops:
                for d in REDUCE_DTYPES:
                    add(f"allreduce_/{op}/{dn[d]}/n={PRIME}", ps, run_allreduce, op=op, dtype=d,
                        shape=(PRIME,), variant="allreduce_")
            for d in REDUCE_DTYPES:
                add(f"allreduce/sum/{dn[d]}/shape=()", ps, run_allreduce, op=E.SUM, dtype=d,
                    shape=())
            for d in REDUCE_DTYPES:
                for op in (E.SUM, E.AVERAGE):
                    add(f"allreduce_async/{op}/{dn[d]}/n={PRIME}", ps, run_allreduce, op=op,
                        dtype=d, shape=(PRIME,), variant="allreduce_async")
                add(f"allreduce_async_/sum/{dn[d]}/n={PRIME}", ps, run_allreduce, op=E.SUM,
                    dtype=d, shape=(PRIME,), variant="allreduce_async_")

            # grouped_allreduce: a group of counts 0, 1, prime and a 2-D
            # tensor; in-place; async; mixed dtypes (also scaled Average).
            for op in variant_ops:
                for d in REDUCE_DTYPES:
                    add(f"grouped_allreduce/{op}/{dn[d]}/{group_tag}", ps, run_grouped_allreduce,
                        op=op, dtypes=[d] * 4, shapes=group_shapes)
            for d in REDUCE_DTYPES:
                add(f"grouped_allreduce_/sum/{dn[d]}/{group_tag}", ps, run_grouped_allreduce,
                    op=E.SUM, dtypes=[d] * 4, shapes=group_shapes, variant="grouped_allreduce_")
                add(f"grouped_allreduce_async/sum/{dn[d]}/{group_tag}", ps,
                    run_grouped_allreduce, op=E.SUM, dtypes=[d] * 4, shapes=group_shapes,
                    variant="grouped_allreduce_async")
            for op, pre, post, tag in [(E.SUM, 1.0, 1.0, ""),
                                       (E.AVERAGE, *SCALE, "/" + SCALE_TAG)]:
                add(f"grouped_allreduce/{op}/mixed-dtypes/n={PRIME}{tag}", ps,
                    run_grouped_allreduce, op=op, dtypes=mixed, shapes=[(PRIME,)] * len(mixed),
                    pre=pre, post=post)

        # allgather: uneven rows (one rank with none), 1-D and multi-dim rows.
        for d in MOVE_DTYPES:
            for n in counts:
                add(f"allgather/{dn[d]}/n={n}", ps, run_allgather, dtype=d, n=n)
            if extras:
                for n in [c for c in counts if c != LARGE]:
                    add(f"allgather/{dn[d]}/n={n}{rows_tag}", ps, run_allgather, dtype=d, n=n,
                        row_shape=ROW_SHAPE)
                add(f"allgather_async/{dn[d]}/n={PRIME}", ps, run_allgather, dtype=d, n=PRIME,
                    variant="allgather_async")
                add(f"grouped_allgather/{dn[d]}/n=0+1+{PRIME}", ps, run_grouped_allgather,
                    dtype=d, ns=[0, 1, PRIME])

        # broadcast: from every rank of the set (--quick: the first and the
        # last); in-place; async.
        roots = ranks if not quick else sorted({ranks[0], last})
        for d in MOVE_DTYPES:
            for n in counts:
                for root in roots:
                    add(f"broadcast/{dn[d]}/n={n}/root={root}", ps, run_broadcast, dtype=d, n=n,
                        root=root)
            if extras:
                for root in roots:
                    add(f"broadcast_/{dn[d]}/n={PRIME}/root={root}", ps, run_broadcast, dtype=d,
                        n=PRIME, root=root, variant="broadcast_")
                add(f"broadcast_async/{dn[d]}/n={PRIME}/root={last}", ps, run_broadcast,
                    dtype=d, n=PRIME, root=last, variant="broadcast_async")
                add(f"broadcast_async_/{dn[d]}/n={PRIME}/root={last}", ps, run_broadcast,
                    dtype=d, n=PRIME, root=last, variant="broadcast_async_")

        # alltoall: uneven splits with zeros (an int32 tensor), no splits;
        # list splits, multi-dim rows, async.
        for d in MOVE_DTYPES:
            for n in counts:
                add(f"alltoall/{dn[d]}/n={n}/splits=tensor", ps, run_alltoall, dtype=d, n=n,
                    splits="tensor")
                add(f"alltoall/{dn[d]}/n={n}/splits=none", ps, run_alltoall, dtype=d, n=n,
                    splits=None)
            if extras:
                add(f"alltoall/{dn[d]}/n={PRIME}/splits=list", ps, run_alltoall, dtype=d,
                    n=PRIME, splits="list")
                add(f"alltoall/{dn[d]}/n={PRIME}{rows_tag}/splits=tensor", ps, run_alltoall,
                    dtype=d, n=PRIME, splits="tensor", row_shape=ROW_SHAPE)
                add(f"alltoall_async/{dn[d]}/n={PRIME}/splits=tensor", ps, run_alltoall,
                    dtype=d, n=PRIME, splits="tensor", variant="alltoall_async")

        # reducescatter: Sum/Average, dim 0 not divisible by the set size;
        # scaled, multi-dim rows, async.
        for op in (E.SUM, E.AVERAGE):
            for d in REDUCE_DTYPES:
                for n in counts:
                    add(f"reducescatter/{op}/{dn[d]}/n={n}", ps, run_reducescatter, op=op,
                        dtype=d, n=n)
                if extras:
                    add(f"reducescatter/{op}/{dn[d]}/n={PRIME}/{SCALE_TAG}", ps,
                        run_reducescatter, op=op, dtype=d, n=PRIME, pre=SCALE[0], post=SCALE[1])
                    add(f"reducescatter/{op}/{dn[d]}/n={PRIME}{rows_tag}", ps, run_reducescatter,
                        op=op, dtype=d, n=PRIME, row_shape=ROW_SHAPE)
        if extras:
            for d in REDUCE_DTYPES:
                add(f"reducescatter_async/sum/{dn[d]}/n={PRIME}", ps, run_reducescatter,
                    op=E.SUM, dtype=d, n=PRIME, variant="reducescatter_async")
            for op in (E.SUM, E.AVERAGE):
                for d in REDUCE_DTYPES:
                    add(f"grouped_reducescatter/{op}/{dn[d]}/n=0+1+{PRIME}x2", ps,
                        run_grouped_reducescatter, op=op, dtype=d, ns=[0, 1, PRIME])

        add("barrier", ps, run_barrier)

        # Many ops in flight at once, synchronized in reverse order.
        if extras:
            batch_counts = [c for c in counts if c != LARGE]
            tag = "+".join(map(str, batch_counts))
            add(f"allreduce_async/batch/sum/all-dtypes/n={tag}", ps, run_allreduce_batch,
                counts=batch_counts)
            add(f"allgather_async/batch/all-dtypes/n={tag}", ps, run_allgather_batch,
                counts=batch_counts)
    for i, c in enumerate(cases):
        c.index = i
    return cases
