"""The driver side of ray_logger: while a run()/execute() call with callbacks
is in progress, what its workers log reaches every callback, in the driver.

    with CallbackPump(callbacks, workers) as pump:   # workers: actor handles
        ... wait for the call's results ...

Lifetime: the pump owns a ray.util.queue.Queue actor (no CPU) from __enter__
to __exit__, and one daemon thread that calls the callbacks; __exit__ hands
the callbacks whatever is still queued, unsets the queue on the workers (so
a later call without callbacks never logs into a dead queue), then stops the
thread and the queue. Without callbacks it does nothing at all.
A callback that raises is reported once (a WARNING of the
"horovod.ray.callbacks" logger: stderr by default, common/log.py) and not
called again; it never fails the job.
"""
import threading

import ray

from horovod_accel.common import log

_POLL_S = 0.1


class CallbackPump:
    def __init__(self, callbacks, workers):
        self._callbacks = list(callbacks or ())
        self._workers = list(workers)
        self._queue = None
        self._thread = None
        self._stop = threading.Event()
        self._broken = set()

    def __enter__(self):
        if not self._callbacks:
            return self
        from ray.util.queue import Queue  # noqa: PLC0415
        self._queue = Queue(actor_options={"num_cpus": 0})
        ray.get([w.set_queue.remote(self._queue) for w in self._workers])
        self._thread = threading.Thread(target=self._loop, name="hvda-ray-callbacks", daemon=True)
        self._thread.start()
        return self

    def add_worker(self, worker):
        """Routes a worker started after __enter__ (elastic mode) to the queue;
        returns the ObjectRef of that call (Ray runs it before the worker's
        later calls), or None without callbacks."""
        if self._queue is None:
            return None
        self._workers.append(worker)
        return worker.set_queue.remote(self._queue)

    def _deliver(self, item):
        for cb in self._callbacks:
            if id(cb) in self._broken:
                continue
            try:
                cb(item)
            except Exception as e:  # noqa: BLE001 - a callback never fails the job
                self._broken.add(id(cb))
                log.get_logger(__name__).warning(
                    "horovod.ray: callback %r raised %s: %s; it is not called again", cb,
                    type(e).__name__, e)

    def _drain(self, block):
        from ray.util.queue import Empty  # noqa: PLC0415
        try:
            item = self._queue.get(block=block, timeout=_POLL_S if block else None)
        except Empty:
            return False
        self._deliver(item)
        return True

    def _loop(self):
        while not self._stop.is_set():
            try:
                self._drain(block=True)
            except ray.exceptions.RayError:
                return  # the queue actor is gone (Ray shut down)

    def __exit__(self, *exc):
        if self._queue is None:
            return
        self._stop.set()
        self._thread.join()
        try:
            while self._drain(block=False):
                pass
        except ray.exceptions.RayError:
            pass
        # Later calls must not log into the queue about to go: unset it on every
        # worker, without waiting (Ray runs it before the worker's next call).
        for w in self._workers:
            w.set_queue.remote(None)
        self._queue.shutdown(force=True)
        self._queue = None
