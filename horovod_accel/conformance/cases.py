"""The case matrix (what each case runs and checks is in collectives.py).

A case is one collective call (or a small group of them for the grouped and
batch cases) with a name that says what it covers:

    <op>/<reduce op>/<dtype>/n=<count>[/<variant>]/ps=<process set>

e.g. `allreduce/sum/float16/n=1031/ps=global`,
`broadcast_/int8/n=1/root=2/ps=0,3`, `alltoall/bool/n=0/splits=tensor/ps=1,2`.
`build_cases()` returns the same list, in the same order, on every rank (it
depends only on the options and the job's size), so collectives meet by the
names `conf.<case index>[.<k>]`.

A case function runs on the members of its process set and returns a list
of problems (empty: passed); exceptions propagate to run_suite.py,
which records them. Inputs come from values.py, expectations from expect.py.
"""
import time
import zlib
from dataclasses import dataclass, field

import torch

from horovod_accel.conformance import expect as E
# The case functions (collectives.py); build_cases() looks them up here, so a
# test may replace one (cases.run_allreduce = ...).
from horovod_accel.conformance.collectives import (
    run_allgather, run_allgather_batch, run_allreduce, run_allreduce_batch, run_alltoall,
    run_barrier, run_broadcast, run_grouped_allgather, run_grouped_allreduce,
    run_grouped_reducescatter, run_reducescatter)
from horovod_accel.conformance.values import DTYPE_NAMES, MOVE_DTYPES, REDUCE_DTYPES

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
        """hvd: horovod_accel.torch, or (plugin-memory mode) a PluginOps over
        it, whose to_device() makes the device buffers."""
        self.hvd = hvd
        self.device = device
        self.rank = hvd.rank()
        self.size = hvd.size()
        self.process_sets = process_sets
        self.self_test_fail = self_test_fail
        # Elements this rank put on the device since run_suite.py last reset
        # it (per case): a case that moved none needs no plugin activity.
        self.device_elements = 0
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
        self.device_elements += host.numel()
        plugin_to_device = getattr(self.hvd, "to_device", None)
        if plugin_to_device is not None:
            return plugin_to_device(host)
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
