"""Check registry for job scripts of the framework adapters (mxnet_scripts/,
jax_scripts/, tf_api_scripts/: run by their tests through horovodrun; every
rank runs the same script; `main(hvd)` takes the adapter module). A check
raises on failure; `main()` runs them in order, prints 'PASS <name>' per
check and stops at the first failure (the ranks could disagree on what
comes next, so going on could hang). Expected values are
computed locally from data that is a function of (rank, index)."""
import sys
import traceback

import numpy as np

_CHECKS = []


def check(fn):
    _CHECKS.append(fn)
    return fn


def unregister(*fns):
    """Drops checks that do not apply to this run (the test knows which)."""
    for fn in fns:
        _CHECKS.remove(fn)


def keep_only(name):
    """Runs only the check called `name` (a test that needs one check alone)."""
    if not any(fn.__name__ == name for fn in _CHECKS):
        raise KeyError(f"no check named {name!r}")
    unregister(*[fn for fn in list(_CHECKS) if fn.__name__ != name])


def close(actual, expected, what, tol=1e-5):
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    if actual.shape != expected.shape or not np.allclose(actual, expected, rtol=tol, atol=tol):
        raise AssertionError(f"{what}: got {actual.tolist()}, expected {expected.tolist()}")


def equal(actual, expected, what):
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape or not np.array_equal(actual, expected):
        raise AssertionError(f"{what}: got {actual.tolist()} ({actual.dtype}), expected "
                             f"{expected.tolist()} ({expected.dtype})")


def raises(exc_types, fn, what, match=None):
    """Calls fn(); AssertionError unless it raises one of exc_types (whose
    message contains `match`, if given). Returns the exception."""
    try:
        fn()
    except exc_types as e:
        if match is not None and match not in str(e):
            raise AssertionError(f"{what}: message lacks {match!r}: {e}") from e
        return e
    raise AssertionError(f"{what}: no {exc_types} raised")


def main(hvd, init_kwargs=None):
    """hvd.init(**init_kwargs); every registered check in order; exit code."""
    hvd.init(**(init_kwargs or {}))
    for fn in _CHECKS:
        name = fn.__name__
        try:
            fn()
        except BaseException:  # noqa: BLE001 -- the rank reports it and exits non-zero
            sys.stderr.write(f"FAIL {name} on rank {hvd.rank()}\n{traceback.format_exc()}\n")
            sys.stderr.flush()
            return 1
        print("PASS", name, flush=True)
    hvd.shutdown()
    return 0
