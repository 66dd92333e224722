"""The collectives whose results are sized by the negotiation (allgather,
grouped_allgather, alltoall) and the control ops (join, barrier).

They block, as upstream's do (upstream waits on the output before
returning): each waits until MXNet has written its inputs, hands their
addresses to the core (common/handles.py submit), waits for the result and
copies it into new NDArrays. Argument errors raise InvalidArgumentError (an
MXNetError and a ValueError) and submit nothing; a failed collective raises
CollectiveError (an MXNetError and a HorovodInternalError) naming the
tensor.
"""
import mxnet as mx
import numpy as np

from horovod_accel.common.default_runtime import DEFAULT_RUNTIME
from horovod_accel.common.exceptions import HorovodInternalError
from horovod_accel.common.handles import HANDLES, submit, submit_internal, synchronize
from horovod_accel.common.process_sets import global_process_set, registered_id
from horovod_accel.mxnet import tensors as _t
from horovod_accel.mxnet.errors import CollectiveError, InvalidArgumentError

_CPU = -1  # the core's device id for host memory


def _wait(handle):
    try:
        return synchronize(handle)
    except HorovodInternalError as e:
        raise CollectiveError(str(e)) from None


def _runtime_and_set(process_set):
    try:
        return DEFAULT_RUNTIME.initialized_runtime(), registered_id(process_set)
    except ValueError as e:
        raise InvalidArgumentError(str(e)) from None


def _submit(op, name, ps_id, enqueue, keep, finish, group_size=None):
    try:
        return submit(op, name, ps_id, enqueue, keep=keep, finish=finish, group_size=group_size)
    except ValueError as e:  # refused at enqueue (a reserved name, not a member, ...)
        raise InvalidArgumentError(str(e)) from None


# ---------------------------------------------------------------- allgather


def _gather_inputs(tensors):
    """(dtype codes, addresses, shapes) of the inputs; waits until MXNet has
    written them."""
    many = len(tensors) > 1
    codes = [_t.dtype_code(t, f"tensor {i} of the group" if many else "the tensor")
             for i, t in enumerate(tensors)]
    return codes, [_t.host_pointer(t) for t in tensors], [_t.shape_of(t) for t in tensors]


def allgather(tensor, name=None, priority=0, process_set=global_process_set):
    """Concatenates `tensor` of every rank of `process_set` along dim 0 (dim 0
    may differ per rank, the other dims must match); a new NDArray. Blocks.
    `priority` is accepted for upstream compatibility."""
    rt, ps_id = _runtime_and_set(process_set)
    (code,), (ptr,), (shape,) = _gather_inputs([tensor])
    return _wait(_submit(
        "allgather", name, ps_id,
        lambda core_name: rt.enqueue_allgather(core_name, ps_id, ptr, code, shape, _CPU),
        keep=tensor, finish=lambda works: _t.from_core_output(works[0].output(), tensor)))


def grouped_allgather(tensors, name=None, priority=0, process_set=global_process_set):
    """allgather of a list of NDArrays as one group; a list of new NDArrays.
    Blocks."""
    tensors = list(tensors)
    rt, ps_id = _runtime_and_set(process_set)
    if not tensors:
        return []
    codes, ptrs, shapes = _gather_inputs(tensors)
    return _wait(_submit(
        "grouped_allgather", name, ps_id,
        lambda names: rt.enqueue_grouped_allgather(names, ps_id, ptrs, codes, shapes, _CPU),
        keep=tensors,
        finish=lambda works: [_t.from_core_output(w.output(), t) for w, t in zip(works, tensors)],
        group_size=len(tensors)))


# ---------------------------------------------------------------- alltoall


def _splits_list(splits):
    """alltoall splits (None, a list of ints or an integer NDArray) as a list
    of ints; [] means an equal split."""
    if splits is None:
        return []
    if isinstance(splits, mx.nd.NDArray):
        if not np.issubdtype(np.dtype(splits.dtype), np.integer) or len(splits.shape) != 1:
            raise InvalidArgumentError(f"alltoall splits must be a 1-D integer NDArray (int32 "
                                       f"upstream), got dtype {np.dtype(splits.dtype).name} "
                                       f"with shape {splits.shape}.")
        return [int(s) for s in splits.asnumpy().tolist()]
    try:
        return [int(s) for s in splits]
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"alltoall splits must be a list of ints or a 1-D integer "
                                   f"NDArray, got {splits!r}.") from None


def alltoall(tensor, splits=None, name=None, priority=0, process_set=global_process_set):
    """Sends rows [sum(splits[:i]), sum(splits[:i+1])) of dim 0 to set rank i
    and concatenates the blocks received, in set-rank order. splits: None
    (an equal split; dim 0 must be divisible by the set size), a list of ints
    or a 1-D integer NDArray. Returns the output NDArray, or (output,
    received_splits) when `splits` is given, received_splits being an int32
    CPU NDArray of the rows received from each rank. Blocks."""
    rt, ps_id = _runtime_and_set(process_set)
    send_splits = _splits_list(splits)
    (code,), (ptr,), (shape,) = _gather_inputs([tensor])

    def finish(works):
        output = _t.from_core_output(works[0].output(), tensor)
        received = mx.nd.array(list(works[0].received_splits()), ctx=mx.cpu(), dtype="int32")
        return output, received

    output, received = _wait(_submit(
        "alltoall", name, ps_id,
        lambda core_name: rt.enqueue_alltoall(core_name, ps_id, ptr, code, shape, _CPU,
                                              send_splits),
        keep=tensor, finish=finish))
    return output if splits is None else (output, received)


# ---------------------------------------------------------------- join / barrier


def join(device=-1):
    """Marks this rank as finished with its data and blocks until every rank
    has joined; until then the other ranks' allreduces proceed with this rank
    contributing zeros (other ops involving a joined rank fail). Returns the
    global rank that joined last.

    Waits first for every pending MXNet operation (mx.nd.waitall()), so each
    collective this rank pushed before join() reaches the core before the
    join does. device: -1 (CPU)."""
    rt = DEFAULT_RUNTIME.initialized_runtime()
    mx.nd.waitall()
    last = _wait(submit_internal("join", lambda: rt.enqueue_join(int(device)), keep=(),
                                 finish=lambda works: int(works[0].join_result())))
    # Every rank gets here once all have joined: unnamed numbering realigns.
    HANDLES.realign()
    return last


def barrier(process_set=global_process_set):
    """Blocks until every rank of `process_set` has reached the barrier
    (engine ops pushed earlier may still be in flight)."""
    rt, ps_id = _runtime_and_set(process_set)
    try:
        handle = submit_internal("barrier", lambda: rt.enqueue_barrier(ps_id), keep=(),
                                 finish=lambda works: None)
    except ValueError as e:
        raise InvalidArgumentError(str(e)) from None
    _wait(handle)
