"""Check registry for the TensorFlow/Keras job scripts (run by
test_tf_api.py / test_keras.py through horovodrun; every rank runs the same
script). A check raises on failure; `main()` runs them in order, prints
'PASS <name>' per check and stops at the first failure (the ranks could
disagree on what comes next, so going on could hang). Expected values are
computed locally from data that is a function of (rank, index)."""
import os
import sys
import traceback

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

_CHECKS = []


def check(fn):
    _CHECKS.append(fn)
    return fn


def unregister(*fns):
    """Drops checks that do not apply to this run (the test knows which)."""
    for fn in fns:
        _CHECKS.remove(fn)


def close(actual, expected, what, tol=1e-5):
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    if actual.shape != expected.shape or not np.allclose(actual, expected, rtol=tol, atol=tol):
        raise AssertionError(f"{what}: got {actual.tolist()}, expected {expected.tolist()}")


def main(hvd, init_kwargs=None):
    """hvd.init(); every registered check in order; exit code."""
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
