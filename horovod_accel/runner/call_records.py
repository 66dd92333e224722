"""A function call run on every rank, and its results, in the job's store
(NOTE [horovod.run store records] in run_task.py): packing the call, reading
the ranks' records back, and turning them into return values in rank order
or into a RankError that names the rank. Shared by every launcher that runs
a function on ranks: horovod.run (run_api.py), horovod.spark.

Where a rank ran is told by the caller: `describe(rank) -> (text, host)`,
e.g. ("rank 1 (host node-a)", "node-a") or ("rank 1 (Spark task 1.0 on h)",
"h"); `by_host(hostnames)` makes the usual one.
"""
import pickle
import sys

from horovod_accel.rendezvous.client import StoreTimeoutError
from horovod_accel.runner import run_task as task
from horovod_accel.runner.rank_error import RankError


def by_host(hostnames):
    """describe() for ranks known by host name ({rank: hostname}; a rank
    without one is named alone)."""
    def describe(rank):
        host = hostnames.get(rank)
        return (f"rank {rank} (host {host})" if host else f"rank {rank}"), host
    return describe


def pack_call(caller, fn, args, kwargs):
    """The call record of `fn(*args, **kwargs)` (bytes); TypeError naming
    `caller` if it cannot be pickled."""
    import cloudpickle  # noqa: PLC0415
    try:
        call = cloudpickle.dumps((fn, tuple(args), dict(kwargs)))
    except Exception as e:
        raise TypeError(f"{caller}: the function and its arguments must be picklable by "
                        f"cloudpickle: {e}") from e
    return pickle.dumps((list(sys.path), call))


def store_call(store, payload):
    """Writes a packed call where every rank fetches it."""
    task.put_blob(store, task.FUNC_KEY, payload)


def read(store, size):
    """{rank: record} of the ranks 0..size-1 that stored one (never waits)."""
    records = {}
    for rank in range(size):
        try:
            records[rank] = pickle.loads(task.get_blob(store, task.result_key(rank), timeout=0))
        except StoreTimeoutError:
            pass
    return records


def first_raised(records):
    """The rank whose exception was caught first (its record's seq), or None."""
    raised = [r for r in records if records[r][0] == "error"]
    return min(raised, key=lambda r: records[r][5]) if raised else None


def raised_error(caller, rank, describe, record):
    """(RankError, the exception unpickled or None) for an "error" record."""
    _, exc_type, message, tb, blob, _ = record
    where, host = describe(rank)
    exc = None
    if blob is not None:
        try:
            exc = pickle.loads(blob)
        except Exception:  # noqa: BLE001 - the text still says what happened
            exc = None
    text = (f"{caller}: {where} raised {exc_type}: {message}\n\n"
            f"Traceback on rank {rank}:\n{tb.rstrip()}")
    return RankError(text, rank, host, f"raised {exc_type}", exc_type, message, tb, exc), exc


def died_error(caller, rp, describe, had_result):
    """RankError for a rank process (rank_process.RankProcess) that failed
    without an exception record: killed, os._exit, a crash, its task lost."""
    how = rp.describe_exit()
    where, host = describe(rp.rank)
    if had_result:
        text = f"{caller}: {where} returned its result but then failed with {how}"
    else:
        text = f"{caller}: {where} failed with {how} before returning a result"
    if how == "signal SIGKILL":
        text += " (a SIGKILL nobody sent is often the out-of-memory killer; see `dmesg`)"
    tail = list(rp.err.tail)
    if tail:
        text += f"\nlast {len(tail)} line(s) of rank {rp.rank}'s stderr:\n" + \
            "\n".join(f"    {t}" for t in tail)
    return RankError(text, rp.rank, host, how, stderr_tail=tail)


def results(caller, records, size, describe):
    """The return values in rank order; raises RankError for a missing or
    failed record or a value that cannot be unpickled here."""
    import cloudpickle  # noqa: F401,PLC0415 - cloudpickled values may need it to load
    for rank in range(size):
        rec = records.get(rank)
        if rec is None:
            where, host = describe(rank)
            raise RankError(f"{caller}: {where} exited with code 0 without returning a result "
                            "(did the function call os._exit()?)", rank, host, "exit code 0")
        if rec[0] == "error":
            err, exc = raised_error(caller, rank, describe, rec)
            raise err from exc
    out = []
    for rank in range(size):
        try:
            out.append(pickle.loads(records[rank][1]))
        except Exception as e:
            raise RankError(f"{caller}: the value rank {rank} returned cannot be unpickled "
                            f"here: {type(e).__name__}: {e}", rank, describe(rank)[1],
                            "returned") from e
    return out
