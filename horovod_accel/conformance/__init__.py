"""The collective conformance suite of horovod_accel (docs/conformance.md).

    horovodrun -np N python -m horovod_accel.conformance --device NAME [--quick]

runs every collective (allreduce and its in-place/async/grouped forms,
allgather, broadcast, alltoall, reducescatter, barrier) over every dtype,
reduce op, odd and zero element counts and process sets on one device, checks
each result against values computed on the host, and ends with the line
`conformance: P passed, F failed` (exit status 1 if F > 0). A device plugin's
vendor runs the same command on its own device.

Modules: values.py (deterministic inputs), expect.py (expected results and
tolerances), cases.py (the case matrix), collectives.py (what each case runs
and checks), run_suite.py (the command line: running, syncing and
reporting).
"""


def main(argv=None):
    """Runs the suite with command-line arguments argv; returns the exit status."""
    from horovod_accel.conformance.run_suite import main as _main
    return _main(argv)


__all__ = ["main"]
