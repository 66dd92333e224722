"""Helpers shared by the torch worker scripts (run by test_torch_ops.py
through horovodrun; every rank runs the same script).

Data is built as f(rank, index), so each rank computes every expected
result locally, without communication. A failed check raises AssertionError
naming the check and the rank; the rank exits non-zero and horovodrun stops
the job.
"""
import os
import sys
import traceback

import torch

import horovod.torch as hvd

INT_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
NUMERIC_DTYPES = INT_DTYPES + FLOAT_DTYPES
ALL_DTYPES = NUMERIC_DTYPES + [torch.bool]
SIZES = [0, 1, 7, 1023]
OPS = {"Sum": hvd.Sum, "Average": hvd.Average, "Min": hvd.Min, "Max": hvd.Max,
       "Product": hvd.Product}


def values(dtype, rank, n, product=False, shift=0):
    """n values f(rank, index) of dtype; small integers, so every sum or
    product over <= 3 ranks is exact in every dtype (int8 and fp16 included)."""
    i = torch.arange(n, dtype=torch.int64) + shift
    if dtype == torch.bool:
        v = (i + rank) % 2
    elif product:
        v = (i + 2 * rank) % 3 + 1 if dtype == torch.uint8 else (i + 2 * rank) % 5 - 2
    elif dtype == torch.uint8:
        v = (3 * i + 7 * rank) % 11
    else:
        v = (3 * i + 7 * rank) % 11 - 5
    return v.to(dtype)


def scale_like_core(t, factor, user=True):
    """What the core's Scale does (NOTE [Scaling contract] in
    csrc/common/dtype.h): a factor the user gave is rounded to the compute
    type (float for float32 and 16-bit floats, double for float64 and
    integers) and multiplied in it; Average's 1/N alone (user=False) is
    applied in double and rounded once (16-bit floats: in float). Integers
    are truncated."""
    if factor == 1.0:
        return t
    if t.dtype in (torch.float16, torch.bfloat16) or (t.dtype == torch.float32 and user):
        return (t.float() * torch.tensor(factor, dtype=torch.float32)).to(t.dtype)
    return (t.double() * factor).to(t.dtype)


def reduce_like_core(inputs, op, pre=1.0, post=1.0):
    """Expected allreduce/reducescatter result of `inputs` (one tensor per
    rank): prescale each, reduce, then scale by post (x 1/n for Average)."""
    inputs = [scale_like_core(t, pre) for t in inputs]
    dtype = inputs[0].dtype
    wide = torch.float64 if dtype.is_floating_point else torch.int64
    stack = torch.stack([t.to(wide) for t in inputs])
    if op in (hvd.Sum, hvd.Average):
        out = stack.sum(0)
    elif op == hvd.Min:
        out = stack.min(0).values
    elif op == hvd.Max:
        out = stack.max(0).values
    else:
        out = stack.prod(0)
    out = out.to(dtype)
    factor = post * (1.0 / len(inputs) if op == hvd.Average else 1.0)
    return scale_like_core(out, factor, user=post != 1.0)


def scatter_rows(d0, n, r):
    """(first row, row count) of set rank r in a reducescatter of d0 rows."""
    counts = [d0 // n + (1 if j < d0 % n else 0) for j in range(n)]
    return sum(counts[:r]), counts[r]


def check(cond, what):
    if not cond:
        raise AssertionError(f"rank {hvd.rank()}: {what}")


def check_equal(got, want, what, atol=0.0):
    """Same shape and dtype, and equal values (within atol for floats)."""
    check(isinstance(got, torch.Tensor), f"{what}: got {type(got).__name__}, not a tensor")
    check(got.dtype == want.dtype, f"{what}: dtype {got.dtype}, want {want.dtype}")
    check(tuple(got.shape) == tuple(want.shape),
          f"{what}: shape {tuple(got.shape)}, want {tuple(want.shape)}")
    if got.dtype.is_floating_point and atol > 0:
        ok = torch.allclose(got.double(), want.double(), atol=atol, rtol=0)
    else:
        ok = torch.equal(got, want)
    if not ok:
        check(False, f"{what}: values differ\n got  {got.flatten()[:16].tolist()}\n "
                     f"want {want.flatten()[:16].tolist()}")


def expect_raises(exc_type, fn, what, match=None):
    try:
        fn()
    except exc_type as e:
        check(match is None or match in str(e), f"{what}: message {str(e)!r} lacks {match!r}")
        return e
    except Exception as e:  # noqa: BLE001 - report what was raised instead
        check(False, f"{what}: raised {type(e).__name__}: {e}, want {exc_type.__name__}")
    check(False, f"{what}: did not raise {exc_type.__name__}")


def run(checks):
    """Initializes Horovod, runs each check function (in order, on every
    rank, with a barrier after each), prints one line per check on rank 0 and
    exits non-zero on failure."""
    hvd.init()
    torch.manual_seed(0)
    for fn in checks:
        try:
            fn()
        except Exception:
            traceback.print_exc()
            sys.stderr.write(f"FAILED {fn.__name__} on rank {hvd.rank()} of {hvd.size()}\n")
            sys.stderr.flush()
            os._exit(1)
        # Keep the ranks in step: a rank that finished early must not shut
        # Horovod down (failing the peers' ops) while the others still check.
        hvd.barrier()
        if hvd.rank() == 0:
            print(f"ok {fn.__name__}", flush=True)
    hvd.shutdown()
    print(f"ALL OK rank {os.environ.get('HOROVOD_RANK', '0')}", flush=True)
