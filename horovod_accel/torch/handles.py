"""`poll` and `synchronize` of the torch adapter: common/handles.py's, except
while `torch.compile` traces, where a handle is a traced.TracedHandle and
waiting for it is a graph node (traced.py)."""
from horovod_accel.common import handles as _handles
from horovod_accel.torch import traced as _traced
from horovod_accel.torch.traced import tracing as _tracing


def poll(handle):
    """True if the op of `handle` has completed (synchronize() then returns
    without blocking). Never blocks. ValueError for a handle that was already
    synchronized or was not returned by a Horovod op. Traced: a bool tensor."""
    if _tracing():
        return _traced.poll(handle)
    return _handles.poll(handle)


def synchronize(handle):
    """Waits for the op of `handle` and returns its output (see
    common/handles.py: errors, the result of each op)."""
    if _tracing():
        return _traced.synchronize(handle)
    return _handles.synchronize(handle)
