"""The collectives that run on MXNet's dependency engine: allreduce,
grouped_allreduce, broadcast, reducescatter, grouped_reducescatter and
their in-place forms (upstream's signatures and semantics).

Contract shared by every op here (see engine.py):
- The call never blocks: it checks the arguments, pushes one engine
  operation and returns the output NDArray(s) at once. The op reads its
  inputs once MXNet has written them; every later MXNet read of an output
  (`asnumpy()`, `wait_to_read()`, an optimizer update) waits for it.
- Argument errors raise InvalidArgumentError (an MXNetError and a
  ValueError) at the call and submit nothing; a name still in use by an
  unfinished op of this rank is not an error: the op waits for it
  (name_order.py). A failed collective (cross-rank mismatch, lost peer,
  shutdown) raises MXNetError when an output is read, naming the tensor.
- Names: "<op>.<name>" when `name` is given, else "<op>.noname.<n>" from
  the unnamed-op counters every adapter shares (common/handles.py); tensor i
  of a group is "<base>_<i+1>of<n>".
- Average divides by the process set's size in the core; integer results of
  scaling are truncated. `priority` is the engine's scheduling hint, as
  upstream.
"""
import mxnet as mx

from horovod_accel.common.basic_names import handle_average_backwards_compatibility
from horovod_accel.common.basics import HorovodBasics
from horovod_accel.common.default_runtime import DEFAULT_RUNTIME
from horovod_accel.common.handles import HANDLES, core_names
from horovod_accel.common.process_sets import global_process_set, registered_id
from horovod_accel.mxnet import engine
from horovod_accel.mxnet import tensors as _t
from horovod_accel.mxnet.errors import InvalidArgumentError
from horovod_accel.mxnet.name_order import NAME_ORDER

Average = HorovodBasics.Average
Sum = HorovodBasics.Sum
Adasum = HorovodBasics.Adasum


def _process_set_id(process_set):
    """The registered id of a set this rank belongs to; InvalidArgumentError
    otherwise, or when Horovod is not initialized."""
    try:
        ps_id = registered_id(process_set)
        rt = DEFAULT_RUNTIME.initialized_runtime()
    except ValueError as e:
        raise InvalidArgumentError(str(e)) from None
    if ps_id != 0 and not rt.process_set_included(ps_id):
        raise InvalidArgumentError(f"This process (rank {rt.rank()}) is not a member of "
                                   f"{process_set}; only members may run collectives on it.")
    return ps_id


def _push(kind, op_key, inputs, outputs, name, ps_id, group, priority, **params):
    """Names and pushes one engine op over `inputs` (see engine.push)."""
    for i, t in enumerate(inputs):
        if not isinstance(t, mx.nd.NDArray):
            what = f"tensor {i} of the group" if group else "the tensor"
            raise InvalidArgumentError(f"Horovod ops take mxnet NDArrays; {what} is a "
                                       f"{type(t).__name__}.")
    size = len(inputs) if group else None

    def push(base, order_after=None):
        names = core_names(base, size)
        engine.push(kind, inputs, outputs, names if group else [names], ps_id,
                    priority=priority, order_after=order_after, **params)

    if name is None:
        # The number is consumed only if the push succeeds.
        HANDLES.run_unnamed(op_key, ps_id, push, rejected=(ValueError,))
    else:
        base = f"{op_key}.{name}"
        push(base, NAME_ORDER.marker(base))


def _reduce_op(op, average, ps_id):
    op = handle_average_backwards_compatibility(op, average)
    if op == Adasum and ps_id != 0:
        raise NotImplementedError("Adasum does not support non-global process sets yet.")
    return op


# ---------------------------------------------------------------- allreduce


def allreduce(tensor, average=None, name=None, priority=0, prescale_factor=1.0,
              postscale_factor=1.0, process_set=global_process_set, op=None):
    """Reduces `tensor` over the ranks of `process_set` into a new NDArray
    (the input is not modified). op: Average (default), Sum, Min, Max,
    Product or Adasum; `average` is deprecated. The result is scaled by
    prescale_factor before and postscale_factor after the reduction."""
    ps_id = _process_set_id(process_set)
    op = _reduce_op(op, average, ps_id)
    output = _t.empty_like(tensor) if isinstance(tensor, mx.nd.NDArray) else None
    _push(engine.ALLREDUCE, "allreduce", [tensor], [output], name, ps_id, False, priority,
          reduce_op=op, prescale=prescale_factor, postscale=postscale_factor)
    return output


def allreduce_(tensor, average=None, name=None, priority=0, prescale_factor=1.0,
               postscale_factor=1.0, process_set=global_process_set, op=None):
    """In-place allreduce: the result is written into `tensor`, which is
    returned."""
    ps_id = _process_set_id(process_set)
    op = _reduce_op(op, average, ps_id)
    _push(engine.ALLREDUCE, "allreduce", [tensor], None, name, ps_id, False, priority,
          reduce_op=op, prescale=prescale_factor, postscale=postscale_factor)
    return tensor


def grouped_allreduce(tensors, average=None, name=None, priority=0, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=global_process_set, op=None):
    """Allreduces a list of NDArrays as one group (negotiated and fused
    together) into a list of new NDArrays."""
    tensors = list(tensors)
    ps_id = _process_set_id(process_set)
    op = _reduce_op(op, average, ps_id)
    if not tensors:
        return []
    outputs = [_t.empty_like(t) if isinstance(t, mx.nd.NDArray) else None for t in tensors]
    _push(engine.ALLREDUCE, "grouped_allreduce", tensors, outputs, name, ps_id, True, priority,
          reduce_op=op, prescale=prescale_factor, postscale=postscale_factor)
    return outputs


def grouped_allreduce_(tensors, average=None, name=None, priority=0, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=global_process_set, op=None):
    """In-place grouped allreduce; returns `tensors`."""
    tensors = list(tensors)
    ps_id = _process_set_id(process_set)
    op = _reduce_op(op, average, ps_id)
    if tensors:
        _push(engine.ALLREDUCE, "grouped_allreduce", tensors, None, name, ps_id, True, priority,
              reduce_op=op, prescale=prescale_factor, postscale=postscale_factor)
    return tensors


# ---------------------------------------------------------------- broadcast


def broadcast(tensor, root_rank, name=None, priority=0, process_set=global_process_set):
    """A new NDArray holding `tensor` of global rank `root_rank` (the input is
    not modified)."""
    ps_id = _process_set_id(process_set)
    output = _t.empty_like(tensor) if isinstance(tensor, mx.nd.NDArray) else None
    _push(engine.BROADCAST, "broadcast", [tensor], [output], name, ps_id, False, priority,
          root_rank=root_rank)
    return output


def broadcast_(tensor, root_rank, name=None, priority=0, process_set=global_process_set):
    """In-place broadcast: non-root ranks receive into `tensor`, which is
    returned."""
    ps_id = _process_set_id(process_set)
    _push(engine.BROADCAST, "broadcast", [tensor], None, name, ps_id, False, priority,
          root_rank=root_rank)
    return tensor


# ---------------------------------------------------------------- reducescatter


def _scattered_output(tensor, ps_id, op_name):
    """This rank's share of dim 0 of a reducescatter of `tensor`: d0 // n
    rows, plus one if the set rank is below d0 % n (as upstream)."""
    if not isinstance(tensor, mx.nd.NDArray):
        return None
    if tensor.shape == ():
        raise InvalidArgumentError(f"{op_name} does not support scalar inputs (the result is "
                                   f"split along dim 0); use allreduce for scalars.")
    rt = DEFAULT_RUNTIME.initialized_runtime()
    n, set_rank = rt.process_set_size(ps_id), rt.process_set_rank(ps_id)
    d0 = tensor.shape[0]
    rows = d0 // n + (1 if set_rank < d0 % n else 0)
    return _t.empty_like(tensor, (rows,) + tuple(tensor.shape[1:]))


def _scatter_op(op):
    if op == Adasum:
        raise NotImplementedError("reducescatter does not support Adasum.")
    return op


def reducescatter(tensor, op=Average, name=None, priority=0, process_set=global_process_set,
                  prescale_factor=1.0, postscale_factor=1.0):
    """Reduces `tensor` (same shape on every rank) over `process_set` and
    returns this rank's share of the result's rows (dim 0). op: Average
    (default), Sum, Min, Max or Product; a scalar raises ValueError."""
    ps_id = _process_set_id(process_set)
    op = _scatter_op(op)
    output = _scattered_output(tensor, ps_id, "reducescatter")
    _push(engine.REDUCESCATTER, "reducescatter", [tensor], [output], name, ps_id, False,
          priority, reduce_op=op, prescale=prescale_factor, postscale=postscale_factor)
    return output


def grouped_reducescatter(tensors, op=Average, name=None, priority=0,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0):
    """reducescatter of a list of NDArrays as one group; a list of new
    NDArrays."""
    tensors = list(tensors)
    ps_id = _process_set_id(process_set)
    op = _scatter_op(op)
    outputs = [_scattered_output(t, ps_id, "grouped_reducescatter") for t in tensors]
    if not tensors:
        return []
    _push(engine.REDUCESCATTER, "grouped_reducescatter", tensors, outputs, name, ps_id, True,
          priority, reduce_op=op, prescale=prescale_factor, postscale=postscale_factor)
    return outputs
