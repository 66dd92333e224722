"""Check registry of the horovod.jax job scripts (run by
tests/python/test_jax_ops.py through horovodrun; every rank runs the same
script).

A check is a function decorated with @check; it raises on failure, or
raises Skip(reason) when what it checks is not available. main() runs the
checks in order, prints 'PASS <name>' (or 'SKIP <name>: <reason>') per
check and stops at the first failure: the ranks could disagree on what
comes next, so going on could hang. Expected values are computed locally
from data that is a function of (rank, index).
"""
import sys
import traceback

import numpy as np

_CHECKS = []


class Skip(Exception):
    """Raised by a check whose subject is not available (the reason says
    why); the same on every rank."""


def check(fn):
    _CHECKS.append(fn)
    return fn


def close(actual, expected, what, tol=1e-6):
    """`actual` (any array) has `expected`'s shape and values within a
    relative and absolute tolerance `tol`."""
    a = np.asarray(actual).astype(np.float64)
    e = np.asarray(expected).astype(np.float64)
    if a.shape != e.shape or not np.allclose(a, e, rtol=tol, atol=tol):
        raise AssertionError(f"{what}: got {a.tolist()}, expected {e.tolist()}")


def equal(actual, expected, what):
    """`actual` has `expected`'s shape, dtype and exact values."""
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


def main(hvd):
    """hvd.init(); every registered check in order; the exit code."""
    hvd.init()
    for fn in _CHECKS:
        name = fn.__name__
        try:
            fn()
        except Skip as e:
            print(f"SKIP {name}: {e}", flush=True)
            continue
        except BaseException:  # noqa: BLE001 -- the rank reports it and exits non-zero
            sys.stderr.write(f"FAIL {name} on rank {hvd.rank()}\n{traceback.format_exc()}\n")
            sys.stderr.flush()
            return 1
        print("PASS", name, flush=True)
    hvd.shutdown()
    return 0
