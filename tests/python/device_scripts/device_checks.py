"""What the device job scripts share (device_ops.py, jax_device_ops.py): a
check runs when it is defined and prints PASS or FAIL; `finish()` prints the
'RESULT OK' line test_accel_device.py looks for on every rank and exits.
Every check runs, so one failure does not hide the others; the checks are
independent collectives that every rank runs in the same order."""
import sys

FAILED = []


def check(fn):
    try:
        fn()
        print(f"PASS {fn.__name__}", flush=True)
    except Exception as e:  # report every check, then fail the job
        FAILED.append(fn.__name__)
        print(f"FAIL {fn.__name__}: {type(e).__name__}: {e}", flush=True)
    return fn


def finish():
    print(f"RESULT {'FAIL ' + ','.join(FAILED) if FAILED else 'OK'}", flush=True)
    sys.exit(1 if FAILED else 0)
