"""Check registry of the elastic state worker scripts: `@check` registers a
function; run_all() runs them in order and prints 'PASS <name>' per check
(rank-prefixed by horovodrun), or the traceback and exit code 1 at the
first failure, so horovodrun stops the job."""
import traceback

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def run_all():
    for fn in CHECKS:
        try:
            fn()
        except BaseException:  # noqa: BLE001 -- report and stop the job
            traceback.print_exc()
            print(f"FAIL {fn.__name__}", flush=True)
            return 1
        print(f"PASS {fn.__name__}", flush=True)
    return 0
