"""Same-name ordering for engine-path ops.

A core name stays reserved from the core's enqueue until the op completes,
and MXNet has no synchronize() that would tell the user when that is. Two
named engine ops that share a name and no NDArray (say two out-of-place
allreduces of different tensors, both named "loss") could therefore be
enqueued while the first is still in flight, and whether the second is
refused as a duplicate would depend on timing. Instead, every named engine
op also writes a per-name marker NDArray (never its data), so MXNet's engine
starts an op only after the previous op of the same name has completed: the
same calls always give the same outcome (docs/design/never_hang.md).

Unnamed ops get unique names and need no marker. Markers are tiny
(one byte) and kept for the `capacity` most recently used
names; an evicted marker only loses the ordering for an op still in flight
under a name not used since `capacity` other names were. shutdown() drops them
all.
"""
import collections
import threading

import mxnet as mx

from horovod_accel.common.default_runtime import DEFAULT_RUNTIME


class NameOrder:
    def __init__(self, capacity=4096):
        self._capacity = capacity
        self._lock = threading.Lock()
        self._markers = collections.OrderedDict()

    def marker(self, name):
        """The marker NDArray of `name` (created on first use)."""
        with self._lock:
            m = self._markers.get(name)
            if m is not None:
                self._markers.move_to_end(name)
                return m
            m = mx.nd.empty((1,), ctx=mx.cpu(), dtype="uint8")
            self._markers[name] = m
            if len(self._markers) > self._capacity:
                self._markers.popitem(last=False)
            return m

    def reset(self):
        with self._lock:
            self._markers.clear()


NAME_ORDER = NameOrder()


def _after_init_or_shutdown():
    if not DEFAULT_RUNTIME.is_initialized():  # a shutdown; init() is idempotent
        NAME_ORDER.reset()


DEFAULT_RUNTIME.add_reset_listener(_after_init_or_shutdown)
