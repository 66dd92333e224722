"""Elastic training, framework-neutral half (upstream `horovod.common.elastic`):
the State protocol and the retry loop behind `hvd.elastic.run`.

The loop (run_fn), per attempt:
  1. every rank agrees whether to sync: the sync is skipped only when *every*
     rank asks to skip (survivors of a pure host removal); a new worker never
     asks, so survivors and newcomers always make the same choice
     (upstream horovod#3494 deadlocked when they did not);
  2. `state.sync()` unless skipped (rank 0's state to every rank); after a
     reset, `state.on_reset()` then runs the state's reset() and the
     callbacks registered with `register_reset_callbacks` (they see the new
     size and the synced state);
  3. `func(state, *args, **kwargs)`; its return value is returned.
  On HorovodInternalError (a peer failed, or the job was shut down under this
  rank): `state.restore()` (the last commit), then reset and retry. On
  HostsUpdatedInterrupt: keep the current state, reset and retry. Reset is
  the adapter's `shutdown(); init()`: init() joins the next round that
  horovodrun's elastic driver forms (elastic_worker.py); a reset that fails
  with HorovodInternalError (a peer lost while the round forms) is retried.
Outside an elastic job (no driver to re-form it) a HorovodInternalError is
raised to the caller unchanged: there is nobody to recover with.
"""
import functools

from horovod_accel.common.default_runtime import DEFAULT_RUNTIME
from horovod_accel.common.exceptions import HorovodInternalError, HostsUpdatedInterrupt


class State:
    """State of a training job that elastic mode saves, restores and syncs.

    bcast_object(obj, root_rank=0) -> obj and get_rank() -> int come from the
    framework adapter; allgather_object(obj) -> [obj per rank] lets the ranks
    agree on host updates and on skipping the sync (without it, rank 0's view
    is broadcast, as upstream did).
    Subclasses implement save(), restore(), sync() and may override reset().
    """

    def __init__(self, bcast_object, get_rank, allgather_object=None):
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._allgather_object = allgather_object
        self._reset_callbacks = []
        # Upstream's internals that its own elastic test scripts poll
        # (`while state._host_messages.empty(): sleep`): kept readable.
        self._host_messages = _PendingHostUpdates()
        self._last_updated_timestamp = 0

    def register_reset_callbacks(self, callbacks):
        """Callables run (in order) after each reset, once the state is synced;
        e.g. to scale the learning rate by the new hvd.size() or to re-create
        process sets."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def on_hosts_updated(self, timestamp, update_res):
        """Upstream's push notification hook; hosts updates are polled from the
        driver here (check_host_updates), so this is a no-op kept for callers."""

    def commit(self):
        """Saves the state (the point restore() returns to) and checks for
        host updates: raises HostsUpdatedInterrupt on every rank together if
        the driver announced one."""
        self.save()
        self.check_host_updates()

    def check_host_updates(self):
        """Collective (every rank must call it at the same point, as commit()
        is): raises HostsUpdatedInterrupt(skip_sync) on every rank when any
        rank sees a host change the driver announced since this round began;
        skip_sync is True when no change added hosts."""
        worker = DEFAULT_RUNTIME.elastic_worker()
        if worker is None:
            return
        pending, added = worker.host_event()
        views = self._agree((pending, added))
        if any(p for p, _ in views):
            raise HostsUpdatedInterrupt(skip_sync=not any(a for _, a in views))

    def _agree(self, value):
        """Every rank's value (list in rank order)."""
        if self._allgather_object is not None:
            return list(self._allgather_object(value))
        return [self._bcast_object(value)]

    def agree_skip_sync(self, skip_sync):
        """True only if every rank asks to skip the sync (collective)."""
        return all(bool(v) for v in self._agree(bool(skip_sync)))

    def save(self):
        raise NotImplementedError(f"{type(self).__name__} must implement save()")

    def restore(self):
        raise NotImplementedError(f"{type(self).__name__} must implement restore()")

    def sync(self):
        raise NotImplementedError(f"{type(self).__name__} must implement sync()")

    def reset(self):
        """Called after each reset, before the reset callbacks."""


class _PendingHostUpdates:
    """Stands in for upstream's per-state queue of driver notifications:
    empty() is False once the driver announced a host update that this
    worker's round does not include (a store read; not collective)."""

    def empty(self):
        worker = DEFAULT_RUNTIME.elastic_worker()
        return worker is None or not worker.host_event()[0]


class ObjectState(State):
    """State of plain Python attributes: `ObjectState(bcast_object, get_rank,
    epoch=0, batch=0)` exposes state.epoch, state.batch; commit() copies them
    (by reference), restore() puts the copies back, sync() broadcasts rank 0's."""

    def __init__(self, bcast_object, get_rank, allgather_object=None, **kwargs):
        self._saved_state = kwargs
        self._set_attrs()
        super().__init__(bcast_object, get_rank, allgather_object)

    def save(self):
        self._saved_state = {attr: getattr(self, attr) for attr in self._saved_state}

    def restore(self):
        self._set_attrs()

    def sync(self):
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state)
            self._set_attrs()

    def _set_attrs(self):
        for attr, value in self._saved_state.items():
            setattr(self, attr, value)


def in_elastic_job():
    return DEFAULT_RUNTIME.elastic_worker() is not None


def run_fn(func, reset):
    """Wraps `func(state, *args, **kwargs)` in the elastic retry loop (module
    docstring); `reset()` re-forms the job (the adapter's shutdown(); init())."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        skip_sync = False
        reset_pending = False
        after_reset = False
        while True:
            try:
                if reset_pending:
                    reset()
                    reset_pending, after_reset = False, True
                if not state.agree_skip_sync(skip_sync):
                    state.sync()
                if after_reset:
                    state.on_reset()
                    after_reset = False
                return func(state, *args, **kwargs)
            except HorovodInternalError:
                if not in_elastic_job():
                    raise
                state.restore()
                skip_sync = False
            except HostsUpdatedInterrupt as e:
                skip_sync = e.skip_sync
            reset_pending = True

    return wrapper
