"""One rank of a `horovod.run(func, ...)` job (run_api.py):

    python -m horovod_accel.runner.run_task

fetches the pickled call from the job's rendezvous store, runs it, stores
what it returned (or what it raised) under this rank's key, and exits 0
(or 1 when func raised, so the launcher's fail-fast stops the other ranks).

The store is the job's own (HOROVOD_GLOO_RENDEZVOUS_ADDR/PORT and its secret,
set by the launcher for every rank, remote ones included). Jobs started by
mpirun have no job store: the caller then serves one for the call alone and
names it in HOROVOD_RUN_FUNC_STORE (addr:port) and HOROVOD_RUN_FUNC_SECRET
(HOROVOD_* names: `horovodrun --mpi` forwards those to every rank).

NOTE [horovod.run store records]
Keys (KEY_PREFIX + ...):
  func            the call: pickle of (caller's sys.path, cloudpickle of
                  (func, args, kwargs))
  result/<rank>   this rank's record: pickle (builtins only, so the caller
                  can always read it) of
                    ("ok", cloudpickle of the return value), or
                    ("error", type name, message, traceback text,
                     cloudpickle of the exception or None, seq)
  errors          a counter (ADD): a rank that raised takes the next value as
                  its record's seq when it catches the exception, so the
                  caller can tell the first exception from its consequences
                  on other ranks (which may exit before the first rank does)
A value is written as chunks `<key>/<i>` of at most CHUNK bytes (store
frames are limited to 64 MiB) and then `<key>/n` (the chunk count), which
readers wait for.
"""
import os
import pickle
import sys
import traceback

from horovod_accel.common import settings
from horovod_accel.common.elastic_worker import in_elastic_job

KEY_PREFIX = "horovod_accel/run/"
FUNC_KEY = KEY_PREFIX + "func"
ERRORS_KEY = KEY_PREFIX + "errors"
STORE_ENV = "HOROVOD_RUN_FUNC_STORE"
SECRET_ENV = "HOROVOD_RUN_FUNC_SECRET"
CHUNK = 32 << 20
_RANK_ENVS = ("HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK")


def result_key(rank):
    return f"{KEY_PREFIX}result/{rank}"


def put_blob(store, key, data):
    """Writes bytes `data` under `key` in chunks (NOTE [horovod.run store records])."""
    view = memoryview(data)
    n = max(1, -(-len(view) // CHUNK))
    for i in range(n):
        store.set(f"{key}/{i}", view[i * CHUNK:(i + 1) * CHUNK])
    store.set(f"{key}/n", str(n))


def get_blob(store, key, timeout=None):
    """Reads what put_blob wrote; waits up to `timeout` s for it (StoreTimeoutError)."""
    n = int(store.get(f"{key}/n", timeout=timeout))
    return b"".join(store.get(f"{key}/{i}", timeout=timeout) for i in range(n))


def _user_traceback(exc):
    """exc's traceback without the leading frames of this module."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None and \
            tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    return tb


def error_record(exc, seq):
    """(record, traceback text) of an exception (NOTE [horovod.run store records])."""
    import cloudpickle  # noqa: PLC0415
    tb = "".join(traceback.format_exception(type(exc), exc, _user_traceback(exc)))
    try:
        blob = cloudpickle.dumps(exc)
        pickle.loads(blob)  # exceptions with custom __init__ may not load again
    except Exception:  # noqa: BLE001 - the text below still tells what happened
        blob = None
    name = type(exc).__qualname__
    if type(exc).__module__ not in ("builtins", "__main__"):
        name = f"{type(exc).__module__}.{name}"
    return pickle.dumps(("error", name, str(exc), tb, blob, seq)), tb


def rank_from_env():
    for name in _RANK_ENVS:
        value = os.environ.get(name)
        if value is not None:
            return int(value)
    raise RuntimeError(f"no rank in the environment ({', '.join(_RANK_ENVS)}); run_task is "
                       "started by horovod.run")


def _store_opener():
    """A function that connects to the store holding the call (see the module doc)."""
    from horovod_accel.rendezvous.client import StoreClient  # noqa: PLC0415
    addr = os.environ.get(STORE_ENV)
    if not addr:
        return StoreClient.from_env
    host, _, port = addr.rpartition(":")
    secret = os.environ.pop(SECRET_ENV, "")  # func and its children do not need it
    timeout = settings.read("HOROVOD_START_TIMEOUT")
    return lambda: StoreClient(host, port, secret, timeout)


def _load_call(payload):
    import cloudpickle  # noqa: PLC0415
    caller_path, call = pickle.loads(payload)
    # Modules the caller imported from its own sys.path entries (a test
    # directory, a notebook's folder) are importable here too.
    for p in caller_path:
        if p and p not in sys.path and os.path.isdir(p):
            sys.path.append(p)
    return cloudpickle.loads(call)


def main():
    rank = rank_from_env()
    connect = _store_opener()
    with connect() as store:
        payload = get_blob(store, FUNC_KEY)
    try:
        func, args, kwargs = _load_call(payload)
        value = func(*args, **kwargs)
        import cloudpickle  # noqa: PLC0415
        try:
            record = pickle.dumps(("ok", cloudpickle.dumps(value)))
        except Exception as e:  # noqa: BLE001
            raise TypeError(f"the value func returned on rank {rank} cannot be pickled "
                            f"({type(value).__name__}): {e}") from e
    except BaseException as e:  # noqa: BLE001 - SystemExit and KeyboardInterrupt too
        if in_elastic_job():
            # Elastic: the driver reports failed workers and survives them;
            # only the last round's ranks return results.
            if isinstance(e, SystemExit) and e.code in (0, None):
                return 0  # removed from the job by the driver
            raise
        with connect() as store:
            record, tb = error_record(e, store.add(ERRORS_KEY, 1))
            sys.stdout.flush()
            # The rank's own stderr, as Python's report of an uncaught exception
            # (the launcher forwards it as the rank's output); not library logging.
            sys.stderr.write(tb)
            sys.stderr.flush()
            put_blob(store, result_key(rank), record)
        return 1
    sys.stdout.flush()
    rank = rank_from_env()  # an elastic worker's rank is that of its last round
    with connect() as store:
        put_blob(store, result_key(rank), record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
