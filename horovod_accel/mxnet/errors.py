"""Exceptions of horovod.mxnet: MXNet's `MXNetError` (what upstream's
adapter raises for every failure) combined with horovod_accel's
conventions, so code that catches either keeps working.

- Argument errors found at the call (an unsupported dtype, a GPU NDArray, a
  process set this rank is not in, ...) raise `InvalidArgumentError`:
  an MXNetError and a ValueError.
- A failed collective raises:
  - from ops that run on MXNet's engine (allreduce, broadcast,
    reducescatter and their grouped / in-place forms): plain MXNetError,
    raised by MXNet when the result is read (`asnumpy()`, `wait_to_read()`,
    an optimizer update reading a gradient), with the core's message, which
    names the tensor and the ranks;
  - from the blocking ops (allgather, alltoall, join, barrier,
    allgather_object): `CollectiveError`, an MXNetError and a
    HorovodInternalError, at the call (broadcast_object reads engine-path
    results: plain MXNetError).
"""
from mxnet.base import MXNetError

from horovod_accel.common.exceptions import HorovodInternalError


class InvalidArgumentError(MXNetError, ValueError):
    """A Horovod op was called with arguments it cannot run with; nothing was
    submitted."""


class CollectiveError(MXNetError, HorovodInternalError):
    """A blocking Horovod collective failed (cross-rank mismatch, lost peer,
    shutdown)."""
