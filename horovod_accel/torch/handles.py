"""Handles of asynchronous ops, `poll`/`synchronize`, and core tensor names.

A `Handle` owns the core `Work` objects of one user-level op (one per tensor
for grouped ops), the tensors whose memory the core reads or writes (kept
alive until the op completes), and a `finish(works)` callable that builds
the result (e.g. wraps a zero-copy allgather output, or copies an in-place result
back into a non-contiguous original).

Every handle stays in the process's `HandleTable` until `synchronize()`
collects it, like upstream's `_handle_map`: an op whose handle the user
drops still has live buffers while the core works on them. init() and
shutdown() reset the table (shutdown has already failed every pending op).

Names follow upstream: name given -> "<op>.<name>", else
"<op>.noname.<n>". n counts unnamed ops per (op, process set) and restarts at
0 on every init(), so ranks that issue the same unnamed ops per process set
agree on the names even if they interleave different ops differently.
"""
import threading

from horovod_accel.common.default_runtime import DEFAULT_RUNTIME
from horovod_accel.common.exceptions import HorovodInternalError

# Work.wait() blocks with the GIL released; waiting in slices lets Python
# run signal handlers (Ctrl-C) while a collective is outstanding.
_WAIT_SLICE_SECONDS = 1.0


class Handle:
    """An in-flight op; pass it to `poll()` / `synchronize()`."""

    __slots__ = ("name", "_works", "_keep", "_finish")

    def __init__(self, name, works, keep, finish):
        self.name = name
        self._works = list(works)
        self._keep = keep
        self._finish = finish

    def __repr__(self):
        return f"<horovod handle {self.name}>"


class HandleTable:
    """Pending handles and per-(op, process set) counters of unnamed ops."""

    def __init__(self):
        self._lock = threading.Lock()
        self._pending = {}
        self._noname = {}

    def tensor_name(self, op, name, process_set_id):
        """Core tensor name of a (non-grouped) op: '<op>.<name>' or '<op>.noname.<n>'."""
        if name is not None:
            return f"{op}.{name}"
        with self._lock:
            n = self._noname.get((op, process_set_id), 0)
            self._noname[(op, process_set_id)] = n + 1
        return f"{op}.noname.{n}"

    def grouped_names(self, op, name, count, process_set_id):
        """Names of a grouped op: '<base>_<i>of<count>' for i = 1..count."""
        base = self.tensor_name(op, name, process_set_id)
        return base, [f"{base}_{i + 1}of{count}" for i in range(count)]

    def add(self, handle):
        with self._lock:
            self._pending[handle] = True
        return handle

    def contains(self, handle):
        with self._lock:
            return handle in self._pending

    def discard(self, handle):
        with self._lock:
            self._pending.pop(handle, None)

    def reset(self):
        with self._lock:
            self._pending = {}
            self._noname = {}


HANDLES = HandleTable()
DEFAULT_RUNTIME.add_reset_listener(HANDLES.reset)


def submit(name, enqueue, keep, finish):
    """Runs enqueue() -> Work or list[Work] and registers a Handle for it.

    keep: objects (tensors) that must stay alive until the op completes.
    finish(works) -> the op's result, called by synchronize() on success.

    enqueue-time errors: ValueError (bad arguments, duplicate in-flight name,
    not initialized) propagates; other core errors become HorovodInternalError.
    """
    try:
        works = enqueue()
    except ValueError:
        raise
    except RuntimeError as e:
        raise HorovodInternalError(str(e)) from e
    if not isinstance(works, list):
        works = [works]
    return HANDLES.add(Handle(name, works, keep, finish))


def poll(handle):
    """True if the op of `handle` has completed (synchronize() then returns
    without blocking). Never blocks. ValueError for a handle that was already
    synchronized or was not returned by a Horovod op."""
    if not isinstance(handle, Handle) or not HANDLES.contains(handle):
        raise ValueError(f"Handle {handle!r} was not created or has been cleared (synchronized).")
    return all(w.is_completed() for w in handle._works)


def synchronize(handle):
    """Waits (GIL released) for the op of `handle` and returns its output:
    a tensor, a list of tensors (grouped ops) or (output, received_splits)
    (alltoall). Raises HorovodInternalError if the collective failed (e.g. a
    cross-rank mismatch, a lost peer, shutdown). Returns None for a handle
    that is unknown or already synchronized (as upstream)."""
    if not isinstance(handle, Handle) or not HANDLES.contains(handle):
        return None
    error = None
    # A KeyboardInterrupt while waiting leaves the handle pending (and its
    # buffers alive), so the op can still be synchronized later.
    for w in handle._works:
        try:
            while not w.wait(_WAIT_SLICE_SECONDS):
                pass
        except RuntimeError as e:
            # Keep waiting on the rest: their buffers must stay alive until
            # the core is done with them.
            error = error or e
    HANDLES.discard(handle)
    if error is not None:
        raise HorovodInternalError(str(error)) from error
    return handle._finish(handle._works)
