"""The call and its results in the job's store, as horovod.run keeps them
(NOTE [horovod.run store records] in horovod_accel/runner/run_task.py: the
rank processes run runner/run_task.py unchanged), read back into return
values or into a RankError that names the rank, for horovod.spark's callers.
"""
import pickle
import sys

from horovod_accel.rendezvous.client import StoreTimeoutError
from horovod_accel.runner import run_task as task
from horovod_accel.runner.run_api import RankError


def pack_call(caller, fn, args, kwargs):
    """The call record of `fn(*args, **kwargs)` (bytes); TypeError if it
    cannot be pickled. Packed before any Spark job starts."""
    import cloudpickle  # noqa: PLC0415
    try:
        call = cloudpickle.dumps((fn, tuple(args), dict(kwargs)))
    except Exception as e:
        raise TypeError(f"{caller}: fn and its arguments must be picklable by cloudpickle: "
                        f"{e}") from e
    return pickle.dumps((list(sys.path), call))


def store_call(store, payload):
    """Writes a packed call where every rank fetches it."""
    task.put_blob(store, task.FUNC_KEY, payload)


def read(store, size):
    """{rank: record} of the ranks 0..size-1 that stored one."""
    records = {}
    for rank in range(size):
        try:
            records[rank] = pickle.loads(task.get_blob(store, task.result_key(rank), timeout=0))
        except StoreTimeoutError:
            pass
    return records


def first_raised(records):
    """The rank whose exception was caught first, or None."""
    raised = [r for r in records if records[r][0] == "error"]
    return min(raised, key=lambda r: records[r][5]) if raised else None


def _where(placement, rank):
    """(text naming the rank's Spark task and host, host name or None)."""
    task, host = placement.get(rank, (None, None))
    if task is None:
        return f"rank {rank}", host
    return f"rank {rank} (Spark task {task} on {host})", host


def raised_error(caller, rank, placement, record):
    """(RankError, the exception unpickled or None) for an "error" record.
    placement: {rank: (task name, host name)}, as far as known."""
    _, exc_type, message, tb, blob, _ = record
    where, host = _where(placement, rank)
    exc = None
    if blob is not None:
        try:
            exc = pickle.loads(blob)
        except Exception:  # noqa: BLE001 - the text says what happened
            exc = None
    text = (f"{caller}: {where} raised {exc_type}: {message}\n\n"
            f"Traceback on rank {rank}:\n{tb.rstrip()}")
    return RankError(text, rank, host, f"raised {exc_type}", exc_type, message, tb, exc), exc


def died_error(caller, rp, placement, had_result):
    """RankError for a rank process that failed without an exception record
    (killed, os._exit, a crash, its Spark task lost)."""
    how = rp.describe_exit()
    where, host = _where(placement, rp.rank)
    if had_result:
        text = f"{caller}: {where} returned its result but then failed: {how}"
    else:
        text = f"{caller}: {where} failed before returning a result: {how}"
    if how == "signal SIGKILL":
        text += " (a SIGKILL nobody sent is often the out-of-memory killer; see `dmesg`)"
    tail = list(rp.err.tail)
    if tail:
        text += f"\nlast {len(tail)} line(s) of rank {rp.rank}'s stderr:\n" + \
            "\n".join(f"    {t}" for t in tail)
    return RankError(text, rp.rank, host, how, stderr_tail=tail)


def results(caller, records, size, placement):
    """The return values in rank order; raises RankError for a missing or
    failed record. placement: {rank: (task name, host name)}."""
    import cloudpickle  # noqa: F401,PLC0415 - cloudpickled values may need it to load
    for rank in range(size):
        rec = records.get(rank)
        if rec is None:
            where, host = _where(placement, rank)
            raise RankError(f"{caller}: {where} exited with code 0 without returning a result "
                            "(did fn call os._exit()?)", rank, host, "exit code 0")
        if rec[0] == "error":
            err, exc = raised_error(caller, rank, placement, rec)
            raise err from exc
    out = []
    for rank in range(size):
        try:
            out.append(pickle.loads(records[rank][1]))
        except Exception as e:
            raise RankError(f"{caller}: the value rank {rank} returned cannot be unpickled on "
                            f"the driver: {type(e).__name__}: {e}", rank,
                            _where(placement, rank)[1], "returned") from e
    return out
