"""Helpers shared by the core-semantics worker scripts (imported from the
script directory, which Python puts first on sys.path).

Every check raises AssertionError naming the rank and what went wrong, so a
failing job exits non-zero with a message the pytest side can show.
"""
import os
import sys


def rank_tag():
    return f"[rank {os.environ.get('HOROVOD_RANK', '0')}]"


def check(cond, msg):
    if not cond:
        raise AssertionError(f"{rank_tag()} {msg}")


def check_equal(actual, expected, what):
    """Exact tensor/list/scalar equality (tensors compared with torch.equal)."""
    import torch
    if isinstance(expected, torch.Tensor):
        ok = (isinstance(actual, torch.Tensor) and actual.dtype == expected.dtype
              and actual.shape == expected.shape and torch.equal(actual, expected))
    else:
        ok = actual == expected
    check(ok, f"{what}: expected {expected!r}, got {actual!r}")


def raises(exc_type, fn, *args, contains=(), what="", **kwargs):
    """Calls fn(*args, **kwargs) and checks it raises exc_type whose message
    contains every string in `contains`; returns the exception."""
    try:
        fn(*args, **kwargs)
    except exc_type as e:
        msg = str(e)
        for c in contains:
            check(c in msg, f"{what}: {type(e).__name__} message lacks {c!r}: {msg!r}")
        return e
    except Exception as e:  # wrong type: report it
        raise AssertionError(f"{rank_tag()} {what}: expected {exc_type.__name__}, got "
                             f"{type(e).__name__}: {e}") from e
    raise AssertionError(f"{rank_tag()} {what}: expected {exc_type.__name__}, nothing raised")


def done(area, **info):
    extra = " ".join(f"{k}={v}" for k, v in info.items())
    print(f"SEMANTICS-OK {area} {rank_tag()} {extra}".rstrip(), flush=True)
    sys.stdout.flush()
