"""Handles of asynchronous ops, `poll`/`synchronize`, and core tensor names,
shared by every framework adapter.

A `Handle` owns the core `Work` objects of one user-level op (one per tensor
for grouped ops), the framework objects whose memory the core reads or
writes (kept alive until the op completes), and a `finish(works)` callable
that builds the result (e.g. wraps a zero-copy allgather output). An adapter
only converts tensors; naming, the handle table and waiting live here.
The per-op fast path (`submit_allreduce`: one named allreduce whose result
needs no finish) returns the core `Work` itself as the handle and keeps the
result (or a `KeepAlive`) beside it in the table: a Handle object, its list
and its attribute reads were a measurable share of a small op
(docs/design/core_binding.md, "Work"). A Handle answers the two calls
poll()/synchronize() make on a Work, `is_completed()` and `finish(timeout)`,
with the same contract, so waiting, name release and error translation are
written once for both kinds. Users only pass handles to poll()/synchronize(),
as upstream's integer handles.

Every handle stays in the process's `HandleTable` until `synchronize()`
collects it, like upstream's `_handle_map`: an op whose handle the user
drops still has live buffers while the core works on them. init() and
shutdown() reset the table (shutdown has already failed every pending op).

Names (docs/design/never_hang.md):
- name given -> "<op>.<name>"; else "<op>.noname.<n>", where n counts the
  unnamed ops of that (op, process set) that this rank *enqueued*: an op
  rejected at enqueue (ValueError) does not consume a number.
- Numbering restarts on every init() and realigns after every join(): ranks
  that joined early skipped the ops the others ran meanwhile, so after a
  join the numbers continue in a new epoch, "<op>.noname.j<epoch>.<n>".
- A name stays reserved on this rank from enqueue until its handle is
  synchronized (NOTE [Name reservation] in csrc/common/name_reservations.h):
  reusing it earlier raises ValueError whether or not the op has completed.
"""
import threading

from horovod_accel.common.default_runtime import DEFAULT_RUNTIME
from horovod_accel.common.exceptions import HorovodInternalError

# Work.wait() blocks with the GIL released; waiting in slices lets Python
# run signal handlers (Ctrl-C) while a collective is outstanding.
_WAIT_SLICE_SECONDS = 1.0


class Handle:
    """An in-flight op; pass it to `poll()` / `synchronize()`."""

    __slots__ = ("_finish", "_keep", "_result", "_works", "name")

    def __init__(self, name, works, keep, finish, result=None):
        self.name = name
        self._works = works if works.__class__ is list else list(works)
        self._keep = keep
        self._finish = finish  # finish(works) -> result, or None: the result is `result`
        self._result = result

    def __repr__(self):
        return f"<horovod handle {self.name}>"

    def is_completed(self):
        """Work.is_completed() of the whole op: every Work completed. Never blocks."""
        return all(w.is_completed() for w in self._works)

    def finish(self, timeout):
        """Work.finish(timeout) of the whole op: waits up to `timeout` per
        Work (GIL released); False while one still runs. Once all are done,
        releases their names, then returns True, or raises the first failed
        Work's error (a RuntimeError). A failed Work does not end the wait:
        the others' buffers must stay alive until the core is done with them."""
        error = None
        for w in self._works:
            try:
                if not w.wait(timeout):
                    return False
            except RuntimeError as e:
                error = error or e
        for w in self._works:
            w.release_name()
        if error is not None:
            raise error
        return True

    def result(self):
        """What synchronize() returns once finish() returned True."""
        finish = self._finish
        return self._result if finish is None else finish(self._works)


class KeepAlive:
    """A fast-path table entry (submit_allreduce) whose result is not the only
    object the core works on: `keep` stays alive until the op completes,
    synchronize() returns `result`."""

    __slots__ = ("keep", "result")

    def __init__(self, keep, result):
        self.keep = keep
        self.result = result


class HandleTable:
    """Pending handles and per-(op, process set) counters of unnamed ops."""

    def __init__(self):
        # Guards the counters and is held from choosing an unnamed op's
        # number until its enqueue returned, so concurrent threads never draw
        # the same number and a rejected op gives its number back.
        self._naming = threading.Lock()
        # Handle -> itself, or (per-op fast path) core Work -> its result, or
        # a KeepAlive. Single dict operations are atomic under the GIL, so the
        # per-op path (add, contains, discard) takes no lock. The same dict
        # lives as long as the table (reset() clears it), so the per-op
        # functions below hold it in a module global.
        self._pending = {}
        self._noname = {}
        self._epoch = 0

    def _unnamed(self, op, process_set_id):
        n = self._noname.get((op, process_set_id), 0)
        if self._epoch:
            return f"{op}.noname.j{self._epoch}.{n}"
        return f"{op}.noname.{n}"

    def submit(self, op, name, process_set_id, enqueue, keep, finish, group_size=None, args=(),
               result=None):
        """Names the op, enqueues it and registers a Handle for it.

        enqueue(core_name, *args) -> Work (group_size None), or
        enqueue(core_names, *args) -> list[Work] for a group of group_size
        tensors named '<base>_<i>of<group_size>'. keep: objects that must stay
        alive until the op completes. finish(works) -> the op's result, called
        by synchronize() on success; or finish=None and the result is
        `result` (the per-op fast path: no closure to build).

        Enqueue-time errors: ValueError (bad arguments, a name still
        reserved, not initialized) and NotImplementedError (a valid request
        this build does not offer, e.g. reducescatter with Adasum; a
        RuntimeError, as upstream's callers expect) propagate; other core
        errors become HorovodInternalError. Either way no number is consumed.
        """
        if name is not None:
            base = f"{op}.{name}"
            works = _call_enqueue(enqueue, _core_names(base, group_size), *args)
        else:
            with self._naming:
                base = self._unnamed(op, process_set_id)
                works = _call_enqueue(enqueue, _core_names(base, group_size), *args)
                key = (op, process_set_id)
                self._noname[key] = self._noname.get(key, 0) + 1
        handle = Handle(base, works, keep, finish, result)
        self._pending[handle] = handle
        return handle

    def submit_internal(self, handle_name, enqueue, keep, finish):
        """Like submit() for ops whose core names are fixed (join, barrier,
        empty groups): enqueue() -> Work or list[Work]."""
        return self.add(Handle(handle_name, _call_enqueue(enqueue), keep, finish))

    def add(self, handle):
        self._pending[handle] = handle
        return handle

    def contains(self, handle):
        try:
            return handle in self._pending
        except TypeError:  # unhashable: not a handle
            return False

    def discard(self, handle):
        self._pending.pop(handle, None)

    def realign(self):
        """Called on every rank when a join() completes: unnamed numbering
        continues in a new epoch, equal on every rank whatever ops the ranks
        that joined early skipped."""
        with self._naming:
            self._epoch += 1
            self._noname = {}

    def reset(self):
        with self._naming:
            self._pending.clear()
            self._noname = {}
            self._epoch = 0

    def run_unnamed(self, op, process_set_id, run, rejected=(ValueError,)):
        """For adapters whose ops take their core name as an argument and
        need no handle (TensorFlow's eager kernels): calls run(name) with the
        next unnamed name of (op, process set), "<op>.noname[.j<epoch>].<n>",
        and returns its result. The number is consumed unless run() raises
        one of `rejected` (the op was refused at enqueue), as for submit().
        Holds the naming lock while run() executes, so unnamed ops of one
        rank are named in the order they are issued (run() may block until
        the collective completes)."""
        with self._naming:
            name = self._unnamed(op, process_set_id)
            try:
                result = run(name)
            except rejected:
                raise
            except BaseException:
                self._noname[(op, process_set_id)] = self._noname.get((op, process_set_id), 0) + 1
                raise
            self._noname[(op, process_set_id)] = self._noname.get((op, process_set_id), 0) + 1
            return result


def core_names(base, group_size):
    """The core name of an op named `base` (group_size None), or the names of
    the tensors of a group of group_size, '<base>_<i>of<group_size>' (i from
    1, upstream's rule). For adapters that enqueue without submit() (the
    MXNet engine library)."""
    if group_size is None:
        return base
    return [f"{base}_{i + 1}of{group_size}" for i in range(group_size)]


_core_names = core_names


# Refusals at enqueue (bad arguments, a name in flight, not initialized; a
# valid request this build does not offer): the caller's to handle, raised as
# they are. Any other core error (a RuntimeError) becomes
# HorovodInternalError, at enqueue as at synchronize().
_REFUSED = (ValueError, NotImplementedError)


def _call_enqueue(enqueue, *args):
    try:
        works = enqueue(*args)
    except _REFUSED:
        raise
    except RuntimeError as e:
        raise HorovodInternalError(str(e)) from e
    return works if works.__class__ is list else [works]


HANDLES = HandleTable()
DEFAULT_RUNTIME.add_reset_listener(HANDLES.reset)
submit = HANDLES.submit
submit_internal = HANDLES.submit_internal
_PENDING = HANDLES._pending


def submit_allreduce(op, name, enqueue, process_set_id, input_ptr, output_ptr, dtype, shape,
                     device, reduce_op, prescale, postscale, entry):
    """The per-op fast path of a named allreduce (the adapters' common case):
    enqueue(core_name, process_set_id, input_ptr, output_ptr, dtype, shape,
    device, reduce_op, prescale, postscale) -> Work, with the core name
    "<op>.<name>" (op: "allreduce"); the Work is the handle. `entry`: what
    synchronize() returns, which must also keep every buffer the core uses
    alive (the in-place tensor), or a KeepAlive. Same errors as submit().
    Positional and without helper calls: this is most of the Python cost of
    a small allreduce_async_ (benchmarks/allreduce.py's async batch)."""
    try:  # _call_enqueue's error translation, inline: one call less per op
        work = enqueue(f"{op}.{name}", process_set_id, input_ptr, output_ptr, dtype, shape,
                       device, reduce_op, prescale, postscale)
    except _REFUSED:
        raise
    except RuntimeError as e:
        raise HorovodInternalError(str(e)) from e
    _PENDING[work] = entry
    return work


def poll(handle):
    """True if the op of `handle` has completed (synchronize() then returns
    without blocking). Never blocks. ValueError for a handle that was already
    synchronized or was not returned by a Horovod op."""
    if not HANDLES.contains(handle):
        raise ValueError(f"Handle {handle!r} was not created or has been cleared (synchronized).")
    return handle.is_completed()  # a Handle, or a core Work (submit_allreduce)


def synchronize(handle):
    """Waits (GIL released) for the op of `handle`, releases its names and
    returns its output (what the adapter's finish() builds: a tensor, a list
    of tensors for grouped ops, (output, received_splits) for alltoall).
    Raises HorovodInternalError if the collective failed (a cross-rank
    mismatch, a deadlock, a lost peer, shutdown). Returns None for a handle
    that is unknown or already synchronized (as upstream)."""
    # Taken out of the table first (one dict operation per op); put back if
    # the wait is interrupted (e.g. KeyboardInterrupt), so the handle stays
    # pending, its buffers alive and its names reserved, and can still be
    # synchronized. The entry keeps the buffers alive meanwhile. (A poll()
    # from another thread during the wait sees the handle as already
    # collected, as it would a moment later.)
    pending = _PENDING
    try:
        entry = pending.pop(handle, None)
    except TypeError:  # unhashable: not a handle
        return None
    if entry is None:
        return None
    # A Handle, or (the per-op fast path, submit_allreduce) the core Work,
    # whose entry is its result or a KeepAlive: one call waits, checks and
    # frees the names.
    try:
        while not handle.finish(_WAIT_SLICE_SECONDS):
            pass
    except RuntimeError as e:
        raise HorovodInternalError(str(e)) from e
    except BaseException:
        pending[handle] = entry
        raise
    if entry.__class__ is KeepAlive:
        return entry.result
    return handle.result() if entry is handle else entry
