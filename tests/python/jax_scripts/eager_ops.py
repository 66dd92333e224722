"""Every horovod.jax collective on concrete arrays (the eager path), every
dtype, process sets, zero-length and odd-sized arrays, pytrees, object
collectives, join/barrier, argument errors and a cross-rank mismatch, and
the same ops inside jax.jit (xla_ops.py) against the eager results:
    horovodrun -np N python tests/python/jax_scripts/eager_ops.py Values are small integers f(rank,
index), exact in every dtype, so expected results need no communication.
Runs with jax_enable_x64 so int64 and float64 arrays exist.
"""
import collections
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "job_lib"))
os.environ["HOROVOD_DYNAMIC_PROCESS_SETS"] = "1"  # process_set_ops_and_non_members adds one

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import horovod.jax as hvd  # noqa: E402
from check_harness import check, main  # noqa: E402

NUMERIC = ["uint8", "int8", "int16", "uint16", "int32", "int64", "float16", "bfloat16",
           "float32", "float64"]
FLOATS = {"float16", "bfloat16", "float32", "float64"}
EVERY = NUMERIC + ["bool"]
OPS = [("sum", hvd.Sum), ("average", hvd.Average), ("min", hvd.Min), ("max", hvd.Max),
       ("product", hvd.Product)]


def close(actual, expected, what, tol=1e-6):
    """`actual` has `expected`'s shape and values within tolerance `tol`."""
    a = np.asarray(actual).astype(np.float64)
    e = np.asarray(expected).astype(np.float64)
    if a.shape != e.shape or not np.allclose(a, e, rtol=tol, atol=tol):
        raise AssertionError(f"{what}: got {a.tolist()}, expected {e.tolist()}")


def equal(actual, expected, what):
    """`actual` has `expected`'s shape, dtype and exact values (the shared
    harness's equal() does not compare dtypes)."""
    a, e = np.asarray(actual), np.asarray(expected)
    if a.shape != e.shape or a.dtype != e.dtype or not np.array_equal(a, e):
        raise AssertionError(f"{what}: got {a.tolist()} ({a.dtype}, shape {a.shape}), expected "
                             f"{e.tolist()} ({e.dtype}, shape {e.shape})")


def raises(exc_types, fn, what, match=()):
    """Calls fn(); AssertionError unless it raises one of exc_types whose
    message contains every string of `match` (a string or a tuple).
    Returns the exception."""
    match = (match,) if isinstance(match, str) else match
    try:
        fn()
    except exc_types as e:
        missing = [m for m in match if m not in str(e)]
        if missing:
            raise AssertionError(f"{what}: message lacks {missing}: {e}") from e
        return e
    raise AssertionError(f"{what}: no {exc_types} raised")


def np_dtype(dtype):
    return np.dtype(jnp.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)


def values(rank, shape, dtype, salt=0):
    """Integers 1..5 (bool: their parity) as a function of (rank, index,
    salt), as a numpy array of `dtype`."""
    n = int(np.prod(shape, dtype=np.int64))
    v = ((np.arange(n) * 7 + rank * 3 + salt) % 5 + 1).reshape(shape)
    return (v % 2 == 1) if dtype == "bool" else v.astype(np_dtype(dtype))


def arr(rank, shape, dtype, salt=0):
    return jnp.asarray(values(rank, shape, dtype, salt))


def ranks():
    return range(hvd.size())


def tolerance(dtype):
    return {"float16": 2e-3, "bfloat16": 1e-2}.get(dtype, 1e-6)


def scales(dtype):
    """(prescale, postscale) keeping results exact: halves for floats,
    integers for integer dtypes (whose scaled results the core truncates)."""
    return (0.5, 3.0) if dtype in FLOATS else (2.0, 3.0)


def expected_reduction(op, shape, dtype, salt=0, members=None, pre=1.0, post=1.0):
    stack = np.stack([values(r, shape, "float64", salt) * pre for r in members or ranks()])
    n = len(stack)
    result = {hvd.Sum: stack.sum(0), hvd.Min: stack.min(0), hvd.Max: stack.max(0),
              hvd.Product: stack.prod(0), hvd.Average: stack.sum(0) / n}[op] * post
    if dtype not in FLOATS:
        result = np.floor(result + 1e-9)  # the core truncates scaled integers
    return result.astype(np_dtype(dtype))


def is_jax(x, dtype, shape):
    """x is a jax.Array of dtype and shape."""
    assert isinstance(x, jax.Array), f"result is a {type(x).__name__}, not a jax.Array"
    assert np.dtype(x.dtype) == np_dtype(dtype), f"dtype {x.dtype}, expected {dtype}"
    assert tuple(x.shape) == tuple(shape), f"shape {x.shape}, expected {shape}"


# ---------------------------------------------------------------- the module


@check
def alias_and_exports():
    import horovod_accel.jax  # noqa: PLC0415
    assert hvd is horovod_accel.jax and hvd.allreduce is horovod_accel.jax.allreduce
    assert sys.modules["horovod.jax"] is horovod_accel.jax
    missing = [n for n in hvd.__all__ if not hasattr(hvd, n)]
    assert not missing, missing
    assert hvd.is_initialized() and 0 <= hvd.rank() < hvd.size()
    assert 0 <= hvd.local_rank() < hvd.local_size()
    assert (hvd.Average, hvd.Sum, hvd.Adasum, hvd.Min, hvd.Max, hvd.Product) == (0, 1, 2, 3, 4, 5)


# ---------------------------------------------------------------- allreduce


@check
def allreduce_every_dtype_and_op_with_scaling():
    for dtype in NUMERIC:
        for shape in [(5,), (3, 4)]:
            for salt, (op_name, op) in enumerate(OPS):
                pre, post = (1.0, 1.0) if (op == hvd.Product and dtype not in FLOATS) \
                    else scales(dtype)
                x = arr(hvd.rank(), shape, dtype, salt)
                out = hvd.allreduce(x, op=op, name=f"ar.{dtype}.{len(shape)}.{op_name}",
                                    prescale_factor=pre, postscale_factor=post)
                what = f"allreduce {dtype} {shape} {op_name} x{pre} x{post}"
                is_jax(out, dtype, shape)
                close(out, expected_reduction(op, shape, dtype, salt, pre=pre, post=post), what,
                      tolerance(dtype))
                equal(x, values(hvd.rank(), shape, dtype, salt), what + ": input changed")


@check
def allreduce_defaults_unnamed_scalars_and_numpy_inputs():
    x = arr(hvd.rank(), (6,), "float32")
    close(hvd.allreduce(x), expected_reduction(hvd.Average, (6,), "float32"), "default Average")
    with_warning = hvd.allreduce(x, average=False)
    close(with_warning, expected_reduction(hvd.Sum, (6,), "float32"), "average=False")
    scalar = hvd.allreduce(jnp.float32(hvd.rank() + 1), op=hvd.Sum)
    is_jax(scalar, "float32", ())
    close(scalar, sum(r + 1 for r in ranks()), "0-d array")
    from_numpy = hvd.allreduce(values(hvd.rank(), (2, 3), "int64"), op=hvd.Max)
    is_jax(from_numpy, "int64", (2, 3))
    equal(from_numpy, expected_reduction(hvd.Max, (2, 3), "int64"), "numpy input")
    from_python = hvd.allreduce(2, op=hvd.Sum)
    assert isinstance(from_python, jax.Array) and int(from_python) == 2 * hvd.size()
    odd = hvd.allreduce(arr(hvd.rank(), (7, 3, 1), "float64"), op=hvd.Sum)
    close(odd, expected_reduction(hvd.Sum, (7, 3, 1), "float64"), "odd-sized")


@check
def adasum_of_equal_vectors_is_the_vector():
    x = jnp.asarray([1.0, -2.0, 3.0, 0.5], jnp.float32)
    close(hvd.allreduce(x, op=hvd.Adasum, name="ada"), x, "Adasum")


@check
def grouped_allreduce_mixed_dtypes():
    specs = [((4,), "float32"), ((2, 3), "int64"), ((7,), "float16"), ((3,), "uint8"),
             ((2, 2), "bfloat16"), ((5,), "uint16")]
    xs = [arr(hvd.rank(), s, d, i) for i, (s, d) in enumerate(specs)]
    named = hvd.grouped_allreduce(xs, op=hvd.Sum, name="group")
    unnamed = hvd.grouped_allreduce(tuple(xs), op=hvd.Max)
    averaged = hvd.grouped_allreduce(xs)
    assert isinstance(named, list) and len(named) == len(specs)
    for i, (s, d) in enumerate(specs):
        is_jax(named[i], d, s)
        close(named[i], expected_reduction(hvd.Sum, s, d, i), f"group {d}", tolerance(d))
        close(unnamed[i], expected_reduction(hvd.Max, s, d, i), f"unnamed group {d}")
        close(averaged[i], expected_reduction(hvd.Average, s, d, i), f"averaged group {d}",
              tolerance(d))
    assert hvd.grouped_allreduce([]) == []


# ---------------------------------------------------------------- allgather / broadcast


@check
def allgather_ragged_every_dtype():
    me = hvd.rank()
    for dtype in EVERY:
        out = hvd.allgather(arr(me, (me + 1, 3), dtype), name=f"ag.{dtype}")
        want = np.concatenate([values(r, (r + 1, 3), dtype) for r in ranks()])
        is_jax(out, dtype, want.shape)
        equal(out, want, f"allgather {dtype}")
    # Rank 0 contributes no rows, odd row sizes elsewhere.
    out = hvd.allgather(arr(me, (me * 2, 5), "bfloat16"))
    equal(out, np.concatenate([values(r, (r * 2, 5), "bfloat16") for r in ranks()]),
          "allgather with an empty rank")
    xs = [arr(me, (me + 1,), "float32"), arr(me, (2, 2), "int32", 1), arr(me, (me,), "bool")]
    outs = hvd.grouped_allgather(xs, name="gg")
    equal(outs[0], np.concatenate([values(r, (r + 1,), "float32") for r in ranks()]), "gg 0")
    equal(outs[1], np.concatenate([values(r, (2, 2), "int32", 1) for r in ranks()]), "gg 1")
    equal(outs[2], np.concatenate([values(r, (r,), "bool") for r in ranks()]), "gg 2")
    assert hvd.grouped_allgather([]) == []


@check
def broadcast_every_dtype_from_every_root():
    for dtype in EVERY:
        for root in ranks():
            x = arr(hvd.rank(), (3, 2), dtype, root)
            out = hvd.broadcast(x, root_rank=root, name=f"bc.{dtype}.{root}")
            is_jax(out, dtype, (3, 2))
            equal(out, values(root, (3, 2), dtype, root), f"broadcast {dtype} from {root}")
            equal(x, values(hvd.rank(), (3, 2), dtype, root), f"broadcast {dtype}: input")
    scalar = hvd.broadcast(jnp.int32(hvd.rank()), root_rank=hvd.size() - 1)
    equal(scalar, np.int32(hvd.size() - 1), "0-d broadcast")


# ---------------------------------------------------------------- alltoall


def alltoall_block(src, dst, rows, dtype):
    """The rows rank src sends to rank dst: value 10*src + dst (bool: its
    parity)."""
    v = np.full((rows, 2), 10 * src + dst)
    return (v % 2 == 1) if dtype == "bool" else v.astype(np_dtype(dtype))


def sent_rows(src, dst):
    """Uneven, and zero from rank 0 to rank 1."""
    return 0 if (src, dst) == (0, 1) else (src + dst) % 3 + 1


@check
def alltoall_uneven_splits_and_received_splits():
    me = hvd.rank()
    for dtype in ["float32", "int64", "uint8", "bfloat16", "bool"]:
        x = jnp.asarray(np.concatenate([alltoall_block(me, d, sent_rows(me, d), dtype)
                                        for d in ranks()]))
        splits = [sent_rows(me, d) for d in ranks()]
        want = np.concatenate([alltoall_block(s, me, sent_rows(s, me), dtype) for s in ranks()])
        received_want = [sent_rows(s, me) for s in ranks()]
        out, received = hvd.alltoall(x, splits, name=f"a2a.{dtype}")
        is_jax(out, dtype, want.shape)
        equal(out, want, f"alltoall {dtype}")
        equal(received, np.asarray(received_want, np.int32), "received splits (list)")
        out, received = hvd.alltoall(x, jnp.asarray(splits, jnp.int64))
        equal(out, want, f"alltoall {dtype}, array splits")
        equal(received, np.asarray(received_want, np.int64), "received splits (int64 array)")
    x = jnp.asarray(np.concatenate([alltoall_block(me, d, 2, "float32") for d in ranks()]))
    out = hvd.alltoall(x)  # equal split: the output alone
    is_jax(out, "float32", (2 * hvd.size(), 2))
    equal(out, np.concatenate([alltoall_block(s, me, 2, "float32") for s in ranks()]),
          "alltoall equal split")


# ---------------------------------------------------------------- reducescatter


def my_rows(d0, members=None):
    """(first row, row count) of this rank's reducescatter share."""
    members = list(members or ranks())
    n, k = len(members), members.index(hvd.rank())
    counts = [d0 // n + (1 if r < d0 % n else 0) for r in range(n)]
    return sum(counts[:k]), counts[k]


@check
def reducescatter_uneven_rows_every_op_and_grouped():
    d0 = 2 * hvd.size() + 1  # never divisible by the size (> 1)
    lo, rows = my_rows(d0)
    for dtype in ["float32", "float64", "int32", "int64", "float16", "bfloat16", "uint8"]:
        for salt, (op_name, op) in enumerate(OPS):
            pre, post = (1.0, 1.0) if op == hvd.Product else scales(dtype)
            x = arr(hvd.rank(), (d0, 3), dtype, salt)
            out = hvd.reducescatter(x, op=op, prescale_factor=pre, postscale_factor=post)
            what = f"reducescatter {dtype} {op_name}"
            is_jax(out, dtype, (rows, 3))
            want = expected_reduction(op, (d0, 3), dtype, salt, pre=pre, post=post)
            close(out, want[lo:lo + rows], what, tolerance(dtype))
    xs = [arr(hvd.rank(), (d0,), "float32"), arr(hvd.rank(), (d0, 2), "int32", 1)]
    outs = hvd.grouped_reducescatter(xs, op=hvd.Sum, name="grs")
    close(outs[0], expected_reduction(hvd.Sum, (d0,), "float32")[lo:lo + rows], "grs 0")
    equal(outs[1], expected_reduction(hvd.Sum, (d0, 2), "int32", 1)[lo:lo + rows], "grs 1")
    one_row = hvd.reducescatter(arr(hvd.rank(), (1, 4), "float32"), op=hvd.Sum)
    lo1, rows1 = my_rows(1)
    close(one_row, expected_reduction(hvd.Sum, (1, 4), "float32")[lo1:lo1 + rows1],
          "fewer rows than ranks")
    assert hvd.grouped_reducescatter([]) == []


# ---------------------------------------------------------------- zero-length arrays


@check
def zero_length_arrays():
    empty = jnp.zeros((0,), jnp.float32)
    out = hvd.allreduce(empty, name="z.ar")
    is_jax(out, "float32", (0,))
    is_jax(hvd.broadcast(jnp.zeros((0, 3), jnp.int32), root_rank=0, name="z.bc"), "int32",
           (0, 3))
    is_jax(hvd.allgather(jnp.zeros((0, 2), jnp.bfloat16), name="z.ag"), "bfloat16", (0, 2))
    is_jax(hvd.reducescatter(jnp.zeros((0, 2), jnp.float32), name="z.rs"), "float32", (0, 2))
    is_jax(hvd.alltoall(jnp.zeros((0, 2), jnp.float32), name="z.a2a"), "float32", (0, 2))
    group = hvd.grouped_allreduce([empty, arr(hvd.rank(), (3,), "float32")], op=hvd.Sum)
    is_jax(group[0], "float32", (0,))
    close(group[1], expected_reduction(hvd.Sum, (3,), "float32"), "group with an empty array")


# ---------------------------------------------------------------- results' placement


@check
def results_follow_the_input_placement():
    device = jax.local_devices()[0]
    committed = jax.device_put(arr(hvd.rank(), (4,), "float32"), device)
    out = hvd.allreduce(committed, op=hvd.Sum)
    assert out.committed and out.devices() == {device}, (out.committed, out.devices())
    loose = hvd.allreduce(arr(hvd.rank(), (4,), "float32"), op=hvd.Sum)
    assert not loose.committed, "an uncommitted input gave a committed result"
    y = jnp.asarray(out) * 2  # results are ordinary arrays
    close(y, 2 * expected_reduction(hvd.Sum, (4,), "float32"), "computing with a result")


# ---------------------------------------------------------------- process sets


@check
def process_set_ops_and_non_members():
    n, me = hvd.size(), hvd.rank()
    if n == 1:
        return  # the only possible set is the global one
    members = [0, 1] if n >= 3 else [1]
    ps = hvd.add_process_set(members)
    try:
        x = arr(me, (len(members) * 2, 2), "float32")
        if me not in members:
            for what, call in [
                    ("allreduce", lambda: hvd.allreduce(x, process_set=ps)),
                    ("grouped_allreduce", lambda: hvd.grouped_allreduce([x], process_set=ps)),
                    ("allgather", lambda: hvd.allgather(x, process_set=ps)),
                    ("broadcast", lambda: hvd.broadcast(x, members[0], process_set=ps)),
                    ("alltoall", lambda: hvd.alltoall(x, process_set=ps)),
                    ("reducescatter", lambda: hvd.reducescatter(x, process_set=ps)),
                    ("barrier", lambda: hvd.barrier(process_set=ps)),
                    ("broadcast_parameters",
                     lambda: hvd.broadcast_parameters({"x": x}, members[0], process_set=ps)),
                    ("allgather_object", lambda: hvd.allgather_object(1, process_set=ps))]:
                raises(ValueError, call, f"non-member {what}",
                       match=(f"rank {me}", "not a member", str(members)))
            return
        summed = hvd.allreduce(x, op=hvd.Sum, process_set=ps, name="ps")
        close(summed, expected_reduction(hvd.Sum, x.shape, "float32", 0, members), "set allreduce")
        b = hvd.broadcast(x, root_rank=members[-1], process_set=ps)
        equal(b, values(members[-1], x.shape, "float32"), "set broadcast")
        raises(ValueError, lambda: hvd.broadcast(x, root_rank=n - 1 if n >= 3 else 0,
                                                 process_set=ps),
               "root outside the set", match="not a member")
        g = hvd.allgather(x, process_set=ps)
        equal(g, np.concatenate([values(r, x.shape, "float32") for r in members]), "set allgather")
        lo, rows = my_rows(x.shape[0], members)
        rs = hvd.reducescatter(x, op=hvd.Sum, process_set=ps)
        close(rs, expected_reduction(hvd.Sum, x.shape, "float32", 0, members)[lo:lo + rows],
              "set reducescatter")
        k = members.index(me)
        a = hvd.alltoall(x, process_set=ps)
        equal(a, np.concatenate([values(r, x.shape, "float32")[2 * k:2 * k + 2]
                                 for r in members]), "set alltoall")
        hvd.barrier(process_set=ps)
        tree = hvd.broadcast_parameters({"x": x}, root_rank=members[0], process_set=ps)
        equal(tree["x"], values(members[0], x.shape, "float32"), "set broadcast_parameters")
        assert hvd.allgather_object(me, process_set=ps) == members
    finally:
        hvd.barrier()
        hvd.remove_process_set(ps)
    raises(ValueError, lambda: hvd.allreduce(arr(me, (2,), "float32"), process_set=ps),
           "removed set", match="not registered")


# ---------------------------------------------------------------- pytrees and objects

Pair = collections.namedtuple("Pair", ["left", "right"])


def params_of(rank):
    """A nested pytree whose array leaves depend on the rank."""
    return {
        "dense": {"kernel": arr(rank, (3, 4), "float32"), "bias": arr(rank, (4,), "bfloat16", 1)},
        "layers": [arr(rank, (2,), "int64", 2), (arr(rank, (2, 2), "bool", 3), "relu")],
        "pair": Pair(values(rank, (3,), "float64", 4), arr(rank, (), "uint8", 5)),
        "steps": rank + 10,
        "nothing": None,
    }


@check
def broadcast_parameters_on_a_nested_pytree():
    root = hvd.size() - 1
    mine = params_of(hvd.rank())
    got = hvd.broadcast_parameters(mine, root_rank=root)
    want = params_of(root)
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(mine)
    for (path, g), (_, w), (_, m) in zip(jax.tree_util.tree_leaves_with_path(got),
                                         jax.tree_util.tree_leaves_with_path(want),
                                         jax.tree_util.tree_leaves_with_path(mine)):
        where = jax.tree_util.keystr(path)
        if isinstance(m, np.ndarray):
            assert isinstance(g, np.ndarray), f"{where}: a numpy leaf came back as {type(g)}"
            equal(g, w, where)
        elif isinstance(m, jax.Array):
            is_jax(g, str(np.dtype(m.dtype)), m.shape)
            equal(g, w, where)
        else:
            assert g is m, f"{where}: a non-array leaf was replaced: {g!r}"
    assert got["steps"] == hvd.rank() + 10, "a Python number leaf must pass through untouched"
    assert hvd.broadcast_parameters({}) == {} and hvd.broadcast_parameters([1, "a"]) == [1, "a"]
    again = hvd.broadcast_parameters(mine, root_rank=0)  # the same names, one call later
    equal(again["dense"]["kernel"], values(0, (3, 4), "float32"), "second call")


@check
def object_collectives():
    n = hvd.size()
    obj = {"from": hvd.rank(), "fn": (lambda v: v + 1), "blob": "x" * 70000} \
        if hvd.rank() == n - 1 else None
    got = hvd.broadcast_object(obj, root_rank=n - 1)
    assert got["from"] == n - 1 and got["fn"](1) == 2 and len(got["blob"]) == 70000
    gathered = hvd.allgather_object({"rank": hvd.rank(), "pad": "y" * (hvd.rank() * 1000)})
    assert gathered == [{"rank": r, "pad": "y" * (r * 1000)} for r in ranks()], gathered
    assert hvd.broadcast_object(None, root_rank=0, name="nothing") is None


# ---------------------------------------------------------------- barrier and join


@check
def barrier_and_join_with_uneven_work():
    hvd.barrier()
    me = hvd.rank()
    results = []
    for k in range(me + 1):  # rank r runs r + 1 allreduces, then joins
        results.append(hvd.allreduce(jnp.ones((3,), jnp.float32), op=hvd.Sum, name=f"uneven.{k}"))
    last = hvd.join()
    assert 0 <= last < hvd.size(), last
    for k, out in enumerate(results):  # ranks below k had joined: they added zeros
        close(out, np.full(3, float(hvd.size() - k)), f"allreduce {k} with joined ranks")
    after = hvd.allreduce(jnp.ones((2,), jnp.float32), op=hvd.Sum)  # unnamed numbering realigned
    close(after, np.full(2, float(hvd.size())), "after join")


# ---------------------------------------------------------------- errors


@check
def argument_errors_are_clear_value_errors():
    n = hvd.size()
    x = jnp.ones((2 * n,), jnp.float32)
    cases = [
        (lambda: hvd.allreduce(x, op=7), "op 7", ("op must be one of", "hvd.Sum")),
        (lambda: hvd.allreduce(x, op="sum"), "op 'sum'", "op must be one of"),
        (lambda: hvd.reducescatter(x, op=-1), "reducescatter op -1", "op must be one of"),
        (lambda: hvd.allreduce(jnp.ones((3,), jnp.complex64)), "complex64",
         ("complex64", "not support", "float32")),
        (lambda: hvd.broadcast(jnp.ones((3,), jnp.uint32), 0), "uint32", "uint32"),
        (lambda: hvd.broadcast(x, root_rank=n), "root n", ("root_rank", "out of range")),
        (lambda: hvd.broadcast(x, root_rank=-1), "root -1", "out of range"),
        (lambda: hvd.broadcast(x, root_rank=True), "root True", "root_rank must be an int"),
        (lambda: hvd.allreduce(jnp.ones((3,), bool)), "bool allreduce", "cannot reduce bool"),
        (lambda: hvd.grouped_reducescatter([x, jnp.ones((n,), bool)]), "bool reducescatter",
         "cannot reduce bool"),
        (lambda: hvd.allreduce(jnp.ones((3,), jnp.int32), op=hvd.Adasum), "int Adasum",
         "floating-point"),
        (lambda: hvd.allreduce([1.0, 2.0]), "a list", ("jax arrays", "list")),
        (lambda: hvd.grouped_allreduce(x), "one array to a grouped op", "list of arrays"),
        (lambda: hvd.grouped_allgather([x, "s"]), "a str in a group", "tensor 1 of the group"),
        (lambda: hvd.allgather(jnp.float32(1)), "scalar allgather", "at least one dimension"),
        (lambda: hvd.reducescatter(jnp.float32(1)), "scalar reducescatter", "scalar"),
        (lambda: hvd.alltoall(x, [1] * (n + 1)), "splits count", ("splits", "one entry")),
        (lambda: hvd.alltoall(x, [3] * n), "splits sum", ("sum to dim 0", f"({2 * n})")),
        (lambda: hvd.alltoall(x, jnp.ones((n,), jnp.float32)), "float splits", "integer"),
        (lambda: hvd.alltoall(jnp.ones((2 * n + 1,)), None) if n > 1 else
         hvd.alltoall(x, "ab"), "indivisible equal split", ("splits",)),
        (lambda: hvd.allreduce(x, op=hvd.Sum, average=True), "op and average", "supersedes"),
        (lambda: hvd.allreduce(x, prescale_factor="two"), "string scale", "Python numbers"),
        (lambda: hvd.join(device=0), "join on a device", "device=-1"),
        (lambda: hvd.allreduce(x, process_set=hvd.ProcessSet([0])), "unregistered set",
         "not registered"),
    ]
    for fn, what, match in cases:
        raises(ValueError, fn, what, match)
    raises(NotImplementedError, lambda: hvd.reducescatter(x, op=hvd.Adasum),
           "Adasum reducescatter", "Adasum")
    # Nothing was submitted: the unnamed numbering still agrees across ranks.
    close(hvd.allreduce(x, op=hvd.Sum), np.full(2 * n, float(n)), "after the errors")


@check
def cross_rank_mismatch_fails_on_every_rank():
    n, me = hvd.size(), hvd.rank()
    if n == 1:
        return  # a mismatch needs two ranks
    e = raises(hvd.HorovodInternalError, lambda: hvd.allreduce(jnp.ones((3 + me,)),
                                                               name="mismatch"),
               "shape mismatch", match=("Mismatched", "allreduce.mismatch"))
    assert "shape" in str(e), e
    raises(hvd.HorovodInternalError,
           lambda: hvd.allgather(jnp.ones((2, 1), jnp.int32 if me % 2 else jnp.float32),
                                 name="dtype_mismatch"),
           "dtype mismatch", match=("Mismatched data types", "dtype_mismatch"))
    raises(hvd.HorovodInternalError, lambda: hvd.broadcast(jnp.ones(2), root_rank=me,
                                                           name="root_mismatch"),
           "root mismatch", match=("Mismatched broadcast root ranks", "root_mismatch"))
    ok = hvd.allreduce(jnp.ones((2,)), op=hvd.Sum, name="after_mismatch")  # the job goes on
    close(ok, np.full(2, float(n)), "after the mismatches")


# ---------------------------------------------------------------- inside jax.jit


@check
def jit_results_equal_eager_results():
    n, me = hvd.size(), hvd.rank()
    x = arr(me, (2 * n, 3), "float32")
    ints = arr(me, (2 * n,), "int32", 1)
    cases = {
        "allreduce": lambda a: hvd.allreduce(a, op=hvd.Sum, prescale_factor=0.5,
                                             postscale_factor=3.0),
        "allreduce_average": lambda a: hvd.allreduce(a),
        "allreduce_max": lambda a: hvd.allreduce(a, op=hvd.Max),
        "grouped_allreduce": lambda a: hvd.grouped_allreduce([a, a * 2], op=hvd.Sum),
        "allgather": lambda a: hvd.allgather(a),
        "grouped_allgather": lambda a: hvd.grouped_allgather([a, a[:1]]),
        "broadcast": lambda a: hvd.broadcast(a, root_rank=n - 1),
        "alltoall": lambda a: hvd.alltoall(a),
        "reducescatter": lambda a: hvd.reducescatter(a, op=hvd.Sum),
        "grouped_reducescatter": lambda a: hvd.grouped_reducescatter([a, a + 1]),
        "broadcast_parameters": lambda a: hvd.broadcast_parameters({"a": a, "b": [a[0]]},
                                                                   root_rank=0),
    }
    for what, fn in cases.items():
        eager = fn(x)
        jitted = jax.jit(fn)(x)
        for e, j in zip(jax.tree_util.tree_leaves(eager), jax.tree_util.tree_leaves(jitted)):
            close(j, e, f"jit {what}")
    close(jax.jit(lambda a: hvd.allreduce(a, op=hvd.Min))(ints),
          hvd.allreduce(ints, op=hvd.Min), "jit int32 Min")
    # The collective runs on every call of the compiled function, not once
    # while tracing.
    summed = jax.jit(lambda a: hvd.allreduce(a, op=hvd.Sum, name="every_call"))
    for k in range(3):
        close(summed(x + k), expected_reduction(hvd.Sum, x.shape, "float32") + n * k,
              f"jit call {k}")
    # Gradients through the public op (Sum's gradient: the allreduced ones).
    grad = jax.grad(lambda a: jnp.sum(hvd.allreduce(a, op=hvd.Sum)))(x)
    close(grad, np.full(x.shape, float(n)), "grad of allreduce Sum")
    raises(ValueError, lambda: jax.jit(lambda a: hvd.alltoall(a, [2] * n))(x),
           "alltoall splits in jit", "inside jax.jit")


if __name__ == "__main__":
    sys.exit(main(hvd))
