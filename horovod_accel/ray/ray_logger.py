"""`ray_logger.log(info)` in a worker: hands `info` to the callbacks of the
run()/execute() call in progress (upstream's module of the same name).

Worker side only; the driver side is callbacks.py. Per-process state: the
queue the driver configured on this actor (worker.set_queue), or None.
"""
import warnings

_queue = None
_warned = False


def configure(queue):
    """Called on the actor by the driver before a call with callbacks."""
    global _queue
    _queue = queue


def log(info_dict):
    """Sends info_dict (picklable) to the driver, which passes it to every
    callback of the current call, in the order logged. Does not wait for the
    callbacks. Without callbacks in the current call it warns once and drops
    the value."""
    global _warned
    if _queue is not None:
        _queue.put(info_dict)
    elif not _warned:
        _warned = True
        warnings.warn("horovod.ray.ray_logger.log() was called, but the current call has no "
                      "callbacks to receive it (pass callbacks=[...] to run/execute)",
                      stacklevel=2)
