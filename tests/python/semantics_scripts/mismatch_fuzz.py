"""mismatch_fuzz.py TARGET [SEED [NAME,PROCESS_SET,OP_NAME]]: randomized cross-rank mismatches.

Runs trials until at least TARGET mismatched collectives have been submitted
(every rank draws the same plan from one seeded random.Random, so all ranks
agree on every trial). Each trial submits 1-4 mismatched ops, sometimes with
healthy bystander ops in flight, on the global set or on a process set
([0, 1] / [1, 2] at np >= 3), then synchronizes them in a rank-local random
order. The mismatch kinds:

  op          one name, different collectives (see same_core_prefix below)
  dtype       different element types (one member of a grouped allreduce)
  shape       different shapes (trailing dims / ndim for allgather, alltoall;
              zero-length and odd sizes included)
  root        different broadcast roots
  reduce_op   different reduction ops
  scale       different prescale / postscale factors
  name        different names (never completes: deadlock detection)
  process_set same name, one rank on a process set, the rest on the global
              set (deadlock detection)
  op_name     different collectives through the public API: the core names
              ('<op>.<name>') differ, so this is a deadlock too

Checks, on every rank of the op's process set: enqueue succeeds;
synchronize raises HorovodInternalError whose message is exactly the
coordinator's sentence naming the core tensor name, the lowest rank and the
first rank that differs from it (always a deviating one) with both values;
for deadlocks, the message names the tensor, the process set and lists, per
rank of the set, exactly the tensors that rank submitted. Inputs are left
unchanged; bystanders complete with exact results. A deadlock ends the
generation: the next op fails at once and init() starts the next one. After
every trial a healthy allreduce gives an exact result, and now and then every mismatched
name is reused consistently (its name was released by the failed
synchronize; names from a small pool also hit the response cache).

Needs HOROVOD_DEADLOCK_TIMEOUT_SECONDS set low (the test uses 1): each
deadlock-class trial waits for it. Prints a FUZZ-SUMMARY on rank 0 and
'SEMANTICS-OK mismatch_fuzz ...' on every rank.
"""
import contextlib
import os
import random
import re
import sys
import time

import torch

import horovod.torch as hvd
from horovod_accel.torch import ops_allreduce, ops_alltoall, ops_gather
from _sem_common import check, check_equal, done, raises

TARGET = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
SEED = int(sys.argv[2]) if len(sys.argv) > 2 else 20261123
# Deadlock-class trials (each costs about the deadlock timeout): how many of
# each kind, spread over the run.
DEADLOCK_QUOTA = {"name": 12, "process_set": 12, "op_name": 5}
if len(sys.argv) > 3:
    DEADLOCK_QUOTA = dict(zip(DEADLOCK_QUOTA, map(int, sys.argv[3].split(","))))
DEADLOCK_EVERY = 19  # one deadlock-class trial every this many trials, until the quota is met

TRACE = os.environ.get("FUZZ_TRACE") == "1"  # print every submission (debugging)
t_start = time.monotonic()
env_size = int(os.environ.get("HOROVOD_SIZE", "1"))
ps01 = ps12 = None
if env_size >= 3:
    ps01, ps12 = hvd.ProcessSet([0, 1]), hvd.ProcessSet([1, 2])
    hvd.init(process_sets=[ps01, ps12])
else:
    hvd.init()
rank, size = hvd.rank(), hvd.size()
check(size >= 2, "mismatch_fuzz.py needs at least 2 ranks")
check(float(os.environ.get("HOROVOD_DEADLOCK_TIMEOUT_SECONDS", "5")) <= 2,
      "run with HOROVOD_DEADLOCK_TIMEOUT_SECONDS <= 2 (deadlock-class trials wait for it)")

# process set key -> (ProcessSet object, sorted global ranks)
SETS = {"g": (hvd.global_process_set, list(range(size)))}
if ps01 is not None:
    SETS["01"] = (ps01, [0, 1])
    SETS["12"] = (ps12, [1, 2])
else:
    DEADLOCK_QUOTA["process_set"] = 0

DTYPES = {"uint8": torch.uint8, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32,
          "int64": torch.int64, "float16": torch.float16, "bfloat16": torch.bfloat16,
          "float32": torch.float32, "float64": torch.float64, "bool": torch.bool}
REDUCE_DTYPES = [d for d in DTYPES if d != "bool"]
REDUCE_OPS = {"Sum": hvd.Sum, "Average": hvd.Average, "Min": hvd.Min, "Max": hvd.Max,
              "Product": hvd.Product}
REDUCING = ("allreduce", "grouped_allreduce", "reducescatter")
ALL_OPS = ("allreduce", "grouped_allreduce", "allgather", "broadcast", "alltoall", "reducescatter")
PLAIN_OPS = ("allreduce", "allgather", "broadcast", "alltoall", "reducescatter")
SCALES = [1.0, 1.0, 2.0, 0.5, 3.0, 0.25]
# The op kind gives every rank's op the same core name: 'xop.<name>'.
SAME_PREFIX = "xop"

rng = random.Random(SEED)                 # shared: every rank draws the same plan
local = random.Random(SEED * 7919 + rank)  # rank-local choices (order, in-place variants)


# ---------------------------------------------------------------- plan


def draw_dim():
    r = rng.random()
    if r < 0.12:
        return 0
    if r < 0.95:
        return rng.choice([1, 1, 2, 3, 4, 5, 7, 13])
    return rng.choice([31, 257, 1031])  # odd, larger sizes


def draw_trailing(ndim):
    """ndim - 1 trailing dims, keeping tensors small."""
    dims = []
    for _ in range(ndim - 1):
        d = draw_dim()
        dims.append(d if d <= 13 else 3)
    return dims


def draw_shape(min_ndim):
    ndim = rng.randint(min_ndim, 3)
    return tuple([draw_dim()] + draw_trailing(ndim)) if ndim else ()


def members(set_key):
    return SETS[set_key][1]


def base_spec(op, set_key, name, dtype=None):
    """Per-rank specs {global rank: dict} of a consistent op on set_key."""
    ranks = members(set_key)
    n = len(ranks)
    common = {"op": op, "set": set_key, "name": name, "pre": 1.0, "post": 1.0, "root": None,
              "reduce": None, "splits": None}
    if op in REDUCING:
        common["dtype"] = dtype if dtype in REDUCE_DTYPES else rng.choice(REDUCE_DTYPES)
        common["reduce"] = rng.choice(list(REDUCE_OPS))
        if rng.random() < 0.2:
            common["pre"], common["post"] = rng.choice(SCALES), rng.choice(SCALES)
    else:
        common["dtype"] = dtype or rng.choice(list(DTYPES))
    specs = {}
    if op == "allreduce":
        common["shape"] = draw_shape(0)
    elif op == "grouped_allreduce":
        k = rng.randint(1, 3)
        common["dtypes"] = [common["dtype"]] + [rng.choice(REDUCE_DTYPES) for _ in range(k - 1)]
        common["shapes"] = [draw_shape(0) for _ in range(k)]
    elif op == "broadcast":
        common["shape"] = draw_shape(0)
        common["root"] = rng.choice(ranks)
    elif op == "reducescatter":
        common["shape"] = draw_shape(1)
    elif op == "allgather":
        trailing = draw_trailing(rng.randint(1, 3))
        for r in ranks:  # dim 0 may differ between ranks
            specs[r] = dict(common, shape=tuple([draw_dim()] + trailing))
    elif op == "alltoall":
        trailing = draw_trailing(rng.randint(1, 3))
        for r in ranks:
            if rng.random() < 0.5:
                splits = None
                d0 = n * rng.choice([0, 1, 1, 2, 3])
            else:
                splits = [rng.choice([0, 1, 2, 3]) for _ in range(n)]
                d0 = sum(splits)
            specs[r] = dict(common, shape=tuple([d0] + trailing), splits=splits)
    else:
        raise AssertionError(op)
    if not specs:
        specs = {r: dict(common) for r in ranks}
    for s in specs.values():  # fresh lists per rank
        for key in ("dtypes", "shapes"):
            if key in s:
                s[key] = list(s[key])
    return specs


def core_name(spec, member=None):
    prefix = spec.get("prefix") or spec["op"]
    base = f"{prefix}.{spec['name']}"
    if spec["op"] == "grouped_allreduce":
        return f"{base}_{(member or 0) + 1}of{len(spec['shapes'])}"
    return base


def fmt_scale(x):
    return "%g" % x


def shape_str(shape):
    return "[" + ", ".join(str(d) for d in shape) + "]"


def deviators_of(ranks):
    """A non-empty proper subset of ranks (the ranks that deviate)."""
    k = rng.randint(1, len(ranks) - 1)
    return sorted(rng.sample(ranks, k))


def other(choices, value):
    return rng.choice([c for c in choices if c != value])


def other_ops(specs, devs, base_op, set_key, name, dtype):
    """Deviators run another op than base_op; deviators that pick the same
    op agree on its other parameters (so the op is all that differs)."""
    alt = {}
    for d in devs:
        o = other(PLAIN_OPS, base_op)
        if o not in alt:
            alt[o] = base_spec(o, set_key, name, dtype)
        specs[d] = alt[o][d]


def plan_cheap_mismatch(kind, name):
    """A mismatched op whose error comes from the coordinator's validation.
    Returns the op plan: per-rank specs, the core name that must be named and
    the exact expected message."""
    set_key = rng.choice(["g", "g", "g", "01", "12"]) if len(SETS) > 1 else "g"
    ranks = members(set_key)
    devs = deviators_of(ranks)
    member = None
    if kind == "op":
        base_op = rng.choice(PLAIN_OPS)
        dtype = rng.choice(REDUCE_DTYPES)  # valid for every op, so every enqueue succeeds
        specs = base_spec(base_op, set_key, name, dtype)
        other_ops(specs, devs, base_op, set_key, name, dtype)
        for s in specs.values():
            s["prefix"] = SAME_PREFIX
        field = lambda s: s["op"]  # noqa: E731
    elif kind == "dtype":
        op = rng.choice(ALL_OPS)
        specs = base_spec(op, set_key, name)
        choices = REDUCE_DTYPES if op in REDUCING else list(DTYPES)
        if op == "grouped_allreduce":
            member = rng.randrange(len(specs[ranks[0]]["dtypes"]))
            for d in devs:
                specs[d]["dtypes"][member] = other(choices, specs[d]["dtypes"][member])
            field = lambda s: s["dtypes"][member]  # noqa: E731
        else:
            for d in devs:
                specs[d]["dtype"] = other(choices, specs[d]["dtype"])
            field = lambda s: s["dtype"]  # noqa: E731
    elif kind == "shape":
        op = rng.choice(ALL_OPS)
        specs = base_spec(op, set_key, name)
        if op == "grouped_allreduce":
            member = rng.randrange(len(specs[ranks[0]]["shapes"]))
            for d in devs:
                old = specs[d]["shapes"][member]
                specs[d]["shapes"][member] = next(s for s in iter(lambda: draw_shape(0), None)
                                                  if s != old)
            field = lambda s: s["shapes"][member]  # noqa: E731
        elif op in ("allgather", "alltoall"):
            n = len(ranks)
            for d in devs:
                old = specs[d]["shape"]
                while True:
                    trailing = draw_trailing(rng.randint(1, 3))
                    if trailing != list(old[1:]):
                        break
                if op == "alltoall":
                    splits = specs[d]["splits"]
                    d0 = sum(splits) if splits is not None else n * rng.choice([0, 1, 2])
                else:
                    d0 = draw_dim()
                specs[d]["shape"] = tuple([d0] + trailing)
            field = lambda s: (len(s["shape"]), s["shape"][1:])  # noqa: E731
        else:
            min_ndim = 1 if op == "reducescatter" else 0
            for d in devs:
                old = specs[d]["shape"]
                specs[d]["shape"] = next(s for s in iter(lambda: draw_shape(min_ndim), None)
                                         if s != old)
            field = lambda s: s["shape"]  # noqa: E731
    elif kind == "root":
        specs = base_spec("broadcast", set_key, name)
        for d in devs:
            specs[d]["root"] = other(ranks, specs[d]["root"])
        field = lambda s: s["root"]  # noqa: E731
    elif kind == "reduce_op":
        specs = base_spec(rng.choice(REDUCING), set_key, name)
        for d in devs:
            specs[d]["reduce"] = other(list(REDUCE_OPS), specs[d]["reduce"])
        field = lambda s: s["reduce"]  # noqa: E731
    elif kind == "scale":
        specs = base_spec(rng.choice(REDUCING), set_key, name)
        for d in devs:
            which = rng.choice(["pre", "post"])
            specs[d][which] = other(SCALES, specs[d][which])
        field = lambda s: (s["pre"], s["post"])  # noqa: E731
    else:
        raise AssertionError(kind)

    # The coordinator compares the lowest rank of the set with the others in
    # rank order and reports the first that differs (necessarily a deviator
    # or, if the lowest rank deviates, the lowest rank itself).
    g0 = ranks[0]
    gb = next(r for r in ranks[1:] if field(specs[r]) != field(specs[g0]))
    a, b = specs[g0], specs[gb]
    op = a["op"]
    cname = core_name(a, member)

    def both(key):  # (rank g0's, rank gb's) value of key (of the grouped member)
        if member is None:
            return a[key], b[key]
        return a[key + "s"][member], b[key + "s"][member]

    if kind == "op":
        msg = (f"Mismatched collective operations for tensor '{cname}': rank {g0} called {a['op']} "
               f"but rank {gb} called {b['op']}.")
    elif kind == "dtype":
        da, db = both("dtype")
        msg = f"Mismatched data types for tensor '{cname}': rank {g0} has {da}, rank {gb} has {db}."
    elif kind == "shape":
        sa, sb = both("shape")
        req = "allreduce" if op == "grouped_allreduce" else op
        msg = (f"Mismatched {req} tensor shapes for tensor '{cname}': rank {g0} has {shape_str(sa)}, "
               f"rank {gb} has {shape_str(sb)}")
        msg += "; all dimensions except the first must match." if op in ("allgather", "alltoall") else "."
    elif kind == "root":
        msg = (f"Mismatched broadcast root ranks for tensor '{cname}': rank {g0} uses root {a['root']}, "
               f"rank {gb} uses root {b['root']}.")
    elif kind == "reduce_op":
        msg = (f"Mismatched reduction operations for tensor '{cname}': rank {g0} uses {a['reduce']}, "
               f"rank {gb} uses {b['reduce']}.")
    else:
        msg = (f"Mismatched prescale/postscale factors for tensor '{cname}': rank {g0} uses "
               f"{fmt_scale(a['pre'])}/{fmt_scale(a['post'])}, rank {gb} uses "
               f"{fmt_scale(b['pre'])}/{fmt_scale(b['post'])}.")
    return {"kind": kind, "set": set_key, "specs": specs, "devs": devs, "core": cname,
            "msg": msg, "mismatch": True}


def plan_deadlock(kind, name):
    """A mismatch that can never complete; every rank of the job submits.
    finish_deadlocks() adds the expected errors."""
    op = rng.choice(PLAIN_OPS)
    ranks = members("g")
    if kind == "process_set":
        set_key = rng.choice([k for k in SETS if k != "g"])
        devs = [rng.choice(members(set_key))]
        specs = base_spec(op, "g", name)
        specs[devs[0]] = base_spec(op, set_key, name)[devs[0]]
    else:
        devs = deviators_of(ranks)
        specs = base_spec(op, "g", name)
        distinct = rng.random() < 0.5
        for d in devs:
            if kind == "name":
                specs[d]["name"] = f"{name}x{d}" if distinct else f"{name}x"
        if kind == "op_name":  # other public ops, so other core names
            other_ops(specs, devs, op, "g", name, rng.choice(REDUCE_DTYPES))
    return {"kind": kind, "set": "g", "specs": specs, "devs": devs, "mismatch": True}


def finish_deadlocks(plans):
    """The error rank r must get for its tensor of deadlock plan p: its own
    core name, the id of the set it submitted on, and per rank of that set
    the tensors that rank submitted there (of every deadlocked op of the
    trial; the others complete or fail before)."""
    dead = [p for p in plans if p["kind"] in DEADLOCK_QUOTA]
    for p in dead:
        p["deadlock"] = {}
        for r, spec in p["specs"].items():
            set_key = spec["set"]
            pending = {m: {core_name(q["specs"][m]) for q in dead if q["specs"][m]["set"] == set_key}
                       for m in members(set_key)}
            p["deadlock"][r] = (core_name(spec), SETS[set_key][0].process_set_id, pending)


def plan_bystander(name):
    set_key = rng.choice(list(SETS))
    op = rng.choice(ALL_OPS)
    specs = base_spec(op, set_key, name)
    for s in specs.values():
        make_safe(s)
    return {"kind": "bystander", "set": set_key, "specs": specs, "mismatch": False}


def make_safe(s):
    """Parameters whose result is exact: small integer values, no Product or
    Average, no scaling."""
    s["pre"] = s["post"] = 1.0
    if s["reduce"] in ("Product", "Average"):
        s["reduce"] = "Sum"


# ---------------------------------------------------------------- execution


def make_tensor(dtype, shape, r, salt):
    n = 1
    for d in shape:
        n *= d
    v = (torch.arange(n, dtype=torch.int64) * (r + 1) + 3 * r + salt) % (2 if dtype == "bool" else 11)
    return v.reshape(shape).to(DTYPES[dtype])


def tensors_of(spec, r, salt):
    if spec["op"] == "grouped_allreduce":
        return [make_tensor(dt, sh, r, salt + i)
                for i, (dt, sh) in enumerate(zip(spec["dtypes"], spec["shapes"]))]
    return make_tensor(spec["dtype"], spec["shape"], r, salt)


@contextlib.contextmanager
def same_core_prefix(prefix):
    """The public API names every op '<op>.<name>', so two ranks running
    different collectives under one name never meet (that is the op_name
    deadlock kind). To reach the coordinator's check that one name is used
    by one collective, the op modules' submit() is given a fixed prefix, so
    every rank's op gets the core name '<prefix>.<name>'."""
    # Every submit entry point of the op modules (submit_allreduce: the
    # per-op fast path of allreduce).
    patched = [(m, attr) for m in (ops_allreduce, ops_gather, ops_alltoall)
               for attr in ("submit", "submit_allreduce") if hasattr(m, attr)]
    saved = [getattr(m, attr) for m, attr in patched]

    def fixed(orig):
        return lambda _op, *args, **kwargs: orig(prefix, *args, **kwargs)

    try:
        for (m, attr), orig in zip(patched, saved):
            setattr(m, attr, fixed(orig))
        yield
    finally:
        for (m, attr), orig in zip(patched, saved):
            setattr(m, attr, orig)


def submit(spec, x):
    ps = SETS[spec["set"]][0]
    op, name = spec["op"], spec["name"]
    inplace = local.random() < 0.3
    red = REDUCE_OPS.get(spec["reduce"])
    with (same_core_prefix(spec["prefix"]) if spec.get("prefix") else contextlib.nullcontext()):
        if op == "allreduce":
            fn = hvd.allreduce_async_ if inplace else hvd.allreduce_async
            return fn(x, name=name, op=red, prescale_factor=spec["pre"], postscale_factor=spec["post"],
                      process_set=ps), inplace
        if op == "grouped_allreduce":
            fn = hvd.grouped_allreduce_async_ if inplace else hvd.grouped_allreduce_async
            return fn(x, name=name, op=red, prescale_factor=spec["pre"], postscale_factor=spec["post"],
                      process_set=ps), inplace
        if op == "broadcast":
            fn = hvd.broadcast_async_ if inplace else hvd.broadcast_async
            return fn(x, root_rank=spec["root"], name=name, process_set=ps), inplace
        if op == "allgather":
            return hvd.allgather_async(x, name=name, process_set=ps), False
        if op == "alltoall":
            return hvd.alltoall_async(x, splits=spec["splits"], name=name, process_set=ps), False
        if op == "reducescatter":
            return hvd.reducescatter_async(x, name=name, op=red, process_set=ps,
                                           prescale_factor=spec["pre"],
                                           postscale_factor=spec["post"]), False
    raise AssertionError(op)


def reduce_expected(ts, how, dtype):
    st = torch.stack([t.to(torch.float64) for t in ts])
    out = {"Sum": st.sum(0), "Min": st.amin(0), "Max": st.amax(0)}[how]
    return out.to(DTYPES[dtype])


def expected_result(plan, salt):
    """This rank's exact result of a consistent (make_safe) op."""
    specs = plan["specs"]
    ranks = members(plan["set"])
    me = specs[rank]
    op = me["op"]
    ins = {r: tensors_of(specs[r], r, salt) for r in ranks}
    if op == "allreduce":
        return reduce_expected([ins[r] for r in ranks], me["reduce"], me["dtype"])
    if op == "grouped_allreduce":
        return [reduce_expected([ins[r][i] for r in ranks], me["reduce"], dt)
                for i, dt in enumerate(me["dtypes"])]
    if op == "broadcast":
        return ins[me["root"]]
    if op == "allgather":
        return torch.cat([ins[r] for r in ranks], 0)
    if op == "reducescatter":
        full = reduce_expected([ins[r] for r in ranks], me["reduce"], me["dtype"])
        n, d0, sr = len(ranks), full.shape[0], ranks.index(rank)
        rows = [d0 // n + (1 if i < d0 % n else 0) for i in range(n)]
        return full[sum(rows[:sr]):sum(rows[:sr + 1])]
    if op == "alltoall":
        n, sr = len(ranks), ranks.index(rank)
        blocks, received = [], []
        for r in ranks:
            sp = specs[r]["splits"] or [ins[r].shape[0] // n] * n
            off = sum(sp[:sr])
            blocks.append(ins[r][off:off + sp[sr]])
            received.append(sp[sr])
        return torch.cat(blocks, 0), torch.tensor(received, dtype=torch.int32)
    raise AssertionError(op)


def check_result(out, expected, what):
    if isinstance(expected, tuple):  # alltoall: (output, received_splits)
        check(isinstance(out, tuple) and len(out) == 2, f"{what}: alltoall result {out!r}")
        check_equal(out[0], expected[0], what)
        check_equal(out[1], expected[1], f"{what} (received splits)")
    elif isinstance(expected, list):
        check(isinstance(out, list) and len(out) == len(expected), f"{what}: grouped result {out!r}")
        for i, (o, e) in enumerate(zip(out, expected)):
            check_equal(o, e, f"{what} [{i}]")
    else:
        check_equal(out, expected, what)


def clone(x):
    return [t.clone() for t in x] if isinstance(x, list) else x.clone()


def same(x, y):
    if isinstance(x, list):
        return len(x) == len(y) and all(same(a, b) for a, b in zip(x, y))
    return x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y)


PENDING_RE = re.compile(r"Pending, per rank: (.*?)\. Every rank must submit")


def parse_pending(msg):
    m = PENDING_RE.search(msg)
    check(m is not None, f"deadlock message lacks the per-rank pending list: {msg!r}")
    out = {}
    for part in m.group(1).split("; "):
        pm = re.fullmatch(r"rank (\d+): (?:\(joined\) )?(.*)", part)
        check(pm is not None, f"unparsable pending entry {part!r} in {msg!r}")
        out[int(pm.group(1))] = set(re.findall(r"'([^']*)'", pm.group(2)))
    return out


def check_error(plan, msg, what):
    check("rank" in msg, f"{what}: message lacks 'rank': {msg!r}")
    if "deadlock" in plan:
        cname, set_id, pending = plan["deadlock"][rank]
        check(msg.startswith(f"Tensor '{cname}': Deadlock detected"),
              f"{what}: expected a deadlock error for {cname!r}, got {msg!r}")
        check(f"no pending collective of process set {set_id} " in msg,
              f"{what}: message does not name process set {set_id}: {msg!r}")
        check_equal(parse_pending(msg), pending, f"{what}: pending tensors per rank in {msg!r}")
        for d in plan["devs"]:
            check(f"rank {d}: " in msg, f"{what}: deviating rank {d} not named: {msg!r}")
    else:
        check(plan["core"] in msg, f"{what}: message lacks the tensor {plan['core']!r}: {msg!r}")
        check(any(f"rank {d} " in msg for d in plan["devs"]),
              f"{what}: no deviating rank of {plan['devs']} named: {msg!r}")
        check(plan["msg"] in msg, f"{what}: expected {plan['msg']!r}, got {msg!r}")


def call_blocking(spec, x):
    """The blocking form of the op (its in-place variant where there is one)."""
    ps = SETS[spec["set"]][0]
    op, name = spec["op"], spec["name"]
    red = REDUCE_OPS.get(spec["reduce"])
    inplace = local.random() < 0.3
    with (same_core_prefix(spec["prefix"]) if spec.get("prefix") else contextlib.nullcontext()):
        if op == "allreduce":
            fn = hvd.allreduce_ if inplace else hvd.allreduce
            return fn(x, name=name, op=red, prescale_factor=spec["pre"],
                      postscale_factor=spec["post"], process_set=ps), inplace
        if op == "grouped_allreduce":
            fn = hvd.grouped_allreduce_ if inplace else hvd.grouped_allreduce
            return fn(x, name=name, op=red, prescale_factor=spec["pre"],
                      postscale_factor=spec["post"], process_set=ps), inplace
        if op == "broadcast":
            fn = hvd.broadcast_ if inplace else hvd.broadcast
            return fn(x, root_rank=spec["root"], name=name, process_set=ps), inplace
        if op == "allgather":
            return hvd.allgather(x, name=name, process_set=ps), False
        if op == "alltoall":
            return hvd.alltoall(x, splits=spec["splits"], name=name, process_set=ps), False
        if op == "reducescatter":
            return hvd.reducescatter(x, name=name, op=red, process_set=ps,
                                     prescale_factor=spec["pre"], postscale_factor=spec["post"]), False
    raise AssertionError(op)


def outcome(p, j, salt, tag, x, keep, inplace, result):
    """Checks one op's outcome: result() returns its output or raises."""
    try:
        out = result()
    except hvd.HorovodInternalError as e:
        check(p["mismatch"], f"{tag}: a consistent op failed: {e}")
        check_error(p, str(e), tag)
        if not inplace:
            check(same(x, keep), f"{tag}: a failed op modified its input")
        return 1
    except Exception as e:
        raise AssertionError(f"[rank {rank}] {tag}: expected HorovodInternalError, got "
                             f"{type(e).__name__}: {e}") from e
    check(not p["mismatch"], f"{tag}: the mismatch did not raise (result {out!r})")
    expected = expected_result(p, salt + j)
    if p["specs"][rank]["op"] == "alltoall" and p["specs"][rank]["splits"] is None \
            and not isinstance(out, tuple):
        expected = expected[0]  # blocking alltoall without splits: the output only
    check_result(out, expected, tag)
    return 0


POLL_LIMIT_S = 60
PATHS = {"blocking": 0, "polled": 0}  # this rank's ops checked through these paths


def run_ops(plans, salt, what):
    """Submits every plan this rank is a member of, in plan order (the last
    one sometimes through the blocking API), then synchronizes the others in
    a rank-local random order (sometimes polling first) and checks each.
    Returns the number of errors this rank saw."""
    mine = [(j, p) for j, p in enumerate(plans) if rank in p["specs"]]
    subs, errors = [], 0
    for n, (j, p) in enumerate(mine):
        spec = p["specs"][rank]
        x = tensors_of(spec, rank, salt + j)
        keep = clone(x)
        tag = f"{what} op {j} ({p['kind']}, {core_name(spec)})"
        if TRACE:
            print(f"TRACE [{rank}] {tag} set={spec['set']} op={spec['op']} dtype={spec['dtype']} "
                  f"shape={spec.get('shapes') or spec['shape']} splits={spec['splits']} "
                  f"root={spec['root']} reduce={spec['reduce']}", flush=True)
        if local.random() < 0.05:
            time.sleep(local.random() * 0.003)  # ranks arrive at different cycles
        if n == len(mine) - 1 and local.random() < 0.25:
            # Every earlier op of the trial is submitted: blocking here is safe.
            PATHS["blocking"] += 1
            errors += outcome(p, j, salt, tag + " [blocking]", x, keep, True,
                              lambda: call_blocking(spec, x)[0])
            continue
        try:
            h, inplace = submit(spec, x)
        except Exception as e:
            raise AssertionError(f"[rank {rank}] {tag}: enqueue raised {type(e).__name__}: {e}") from e
        subs.append((j, p, h, x, keep, inplace, tag))
    local.shuffle(subs)
    for j, p, h, x, keep, inplace, tag in subs:
        if "deadlock" not in p and local.random() < 0.2:
            # Not blocked in Horovod while polling (so no deadlock verdict
            # can form meanwhile); an op that can complete must.
            PATHS["polled"] += 1
            deadline = time.monotonic() + POLL_LIMIT_S
            while not hvd.poll(h):
                check(time.monotonic() < deadline, f"{tag}: poll() not done after {POLL_LIMIT_S} s")
                time.sleep(0.0005)
        errors += outcome(p, j, salt, tag, x, keep, inplace, lambda: hvd.synchronize(h))
    return errors


def healthy(i):
    """A normal allreduce after every trial; sometimes one on each process set too."""
    name = "healthy" if i % 2 else f"h{i % 37}"
    out = hvd.allreduce(torch.full((5,), float(rank + i)), op=hvd.Sum, name=name)
    check_equal(out, torch.full((5,), float(sum(r + i for r in range(size)))),
                f"healthy allreduce after trial {i}")
    if i % 10 == 0:
        for key, (ps, ranks) in SETS.items():
            if key != "g" and rank in ranks:
                out = hvd.allreduce(torch.full((3,), rank * 10 + i, dtype=torch.int64), op=hvd.Sum,
                                    name=f"healthy_{key}", process_set=ps)
                check_equal(out, torch.full((3,), sum(r * 10 + i for r in ranks), dtype=torch.int64),
                            f"healthy allreduce on set {key} after trial {i}")


def realign(i):
    """After a deadlock the generation has ended (NOTE [A deadlock ends the
    generation] in csrc/common/coordinator.h): every op fails at once until
    init() starts the next generation, with every rank in step."""
    raises(hvd.HorovodInternalError, hvd.allreduce, torch.ones(1), name=f"late{i}",
           contains=("ended after a detected deadlock",), what=f"allreduce after trial {i}")
    hvd.init(process_sets=[ps01, ps12] if ps01 is not None else None)


CHEAP_KINDS = ["op", "dtype", "shape", "root", "reduce_op", "scale"]
POOL = [f"pool{k}" for k in range(16)]
deadlock_queue = [k for k, n in DEADLOCK_QUOTA.items() for _ in range(n)]
rng.shuffle(deadlock_queue)

counts = {k: 0 for k in CHEAP_KINDS + list(DEADLOCK_QUOTA)}
by_set = {k: 0 for k in SETS}
zero_length = 0
mismatches = trials = bystanders = reruns = errors_seen = 0
deadlock_time = 0.0
healthy(0)
i = 0
while mismatches < TARGET or deadlock_queue:
    i += 1
    trials += 1
    salt = rng.randrange(1000)
    plans = []
    used = set()
    if deadlock_queue and i % DEADLOCK_EVERY == 0:
        # One or two ops that can never complete, sometimes with validation
        # mismatches and bystanders that resolve before the deadlock does.
        for j in range(1 if len(deadlock_queue) < 2 or rng.random() < 0.7 else 2):
            plans.append(plan_deadlock(deadlock_queue.pop(), f"fz{i}d{j}"))
        finish_deadlocks(plans)
        n_cheap = rng.choice([0, 0, 1, 2])
    else:
        n_cheap = rng.choice([1, 1, 1, 1, 2, 2, 3, 4])
    for j in range(n_cheap):
        name = rng.choice(POOL) if rng.random() < 0.15 else f"fz{i}_{j}"
        if name in used:
            name = f"fz{i}_{j}"
        used.add(name)
        plans.append(plan_cheap_mismatch(rng.choice(CHEAP_KINDS), name))
    for j in range(rng.choice([0, 0, 0, 1, 2])):
        plans.insert(rng.randrange(len(plans) + 1), plan_bystander(f"by{i}_{j}"))
    is_deadlock_trial = any("deadlock" in p for p in plans)
    for p in plans:
        if p["mismatch"]:
            mismatches += 1
            counts[p["kind"]] += 1
            by_set[p["set"]] += 1
            shapes = [sh for s in p["specs"].values() for sh in (s.get("shapes") or [s["shape"]])]
            zero_length += any(0 in sh for sh in shapes)
        else:
            bystanders += 1
    t0 = time.monotonic()
    errors_seen += run_ops(plans, salt, f"trial {i}")
    if is_deadlock_trial:
        deadlock_time += time.monotonic() - t0
        realign(i)
    healthy(i)
    if rng.random() < 0.25:
        # The failed names were released: reuse them consistently.
        again = []
        for p in plans:
            if not p["mismatch"] or "deadlock" in p:
                continue
            base_rank = members(p["set"])[0]
            ref = p["specs"][base_rank]
            specs = base_spec(ref["op"] if p["kind"] != "op" else rng.choice(PLAIN_OPS), p["set"],
                              ref["name"])
            for s in specs.values():
                make_safe(s)
                s["prefix"] = ref.get("prefix")
            again.append({"kind": "rerun", "set": p["set"], "specs": specs, "mismatch": False})
        reruns += len(again)
        run_ops(again, salt + 100, f"trial {i} rerun")

check(mismatches >= TARGET, f"only {mismatches} mismatches")
# A last global collective, so no rank shuts down while others still run
# process-set ops (shutdown fails what the other ranks have pending).
check_equal(hvd.allreduce(torch.tensor([float(mismatches)]), op=hvd.Max, name="final"),
            torch.tensor([float(mismatches)]), "final allreduce")
elapsed = time.monotonic() - t_start
if rank == 0:
    kinds = " ".join(f"{k}={v}" for k, v in counts.items())
    sets = " ".join(f"{k}={v}" for k, v in by_set.items())
    print(f"FUZZ-SUMMARY np={size} mismatches={mismatches} trials={trials} kinds: {kinds} | "
          f"sets: {sets} | zero_length={zero_length} bystanders={bystanders} reruns={reruns} "
          f"deadlock_time={deadlock_time:.1f}s elapsed={elapsed:.1f}s", flush=True)
hvd.shutdown()
done("mismatch_fuzz", size=size, mismatches=mismatches, errors_seen=errors_seen, **PATHS)
