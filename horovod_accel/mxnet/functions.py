"""broadcast_parameters, broadcast_object and allgather_object (upstream
`horovod.mxnet.broadcast_parameters` and `horovod.mxnet.functions`).

Every function here is collective: all ranks must call it in the same order
with the same root_rank and names.
"""
import types

import mxnet as mx
import numpy as np

from horovod_accel.common.basic_names import rank, size
from horovod_accel.common.objects import (allgather_object_with, broadcast_object_with,
                                           object_op_names)
from horovod_accel.common.process_sets import global_process_set
from horovod_accel.mxnet.errors import InvalidArgumentError
from horovod_accel.mxnet.ops_blocking import allgather
from horovod_accel.mxnet.ops_engine import broadcast_

try:  # MXNet 1.x; MXNet 2 collects parameters in plain dicts
    from mxnet.gluon.parameter import ParameterDict as _ParameterDict
    _PARAM_CONTAINERS = (dict, _ParameterDict)
except ImportError:
    _PARAM_CONTAINERS = (dict,)


def _broadcast_after_init(param, root_rank, name):
    """Makes a Gluon Parameter whose initialization is deferred (its shape is
    known only at the first forward pass) broadcast its value right after it
    is initialized, under `name`. Every rank runs the same first forward
    pass, so every rank broadcasts at the same point."""
    init_impl = param._init_impl

    def init_and_broadcast(self, *args, **kwargs):
        init_impl(*args, **kwargs)
        broadcast_(self.data(), root_rank=root_rank, name=name)

    param._init_impl = types.MethodType(init_and_broadcast, param)


def broadcast_parameters(params, root_rank=0, prefix=None):
    """Overwrites `params` on every rank with the values of `root_rank`.

    params: a dict of name -> NDArray (e.g. `Module.get_params()[0]`) or of
    name -> Gluon Parameter, or a Gluon ParameterDict
    (`Block.collect_params()`). Entries are broadcast in sorted name order,
    each named `<prefix><name>`; give different prefixes to calls that would
    otherwise reuse names. Parameters whose initialization is deferred are
    broadcast when they are initialized (at the first forward pass).

    Does not block: the broadcasts run on MXNet's engine, and every read of a
    parameter waits for its broadcast. Does nothing when Horovod runs one
    process."""
    if not isinstance(params, _PARAM_CONTAINERS):
        raise InvalidArgumentError(f"broadcast_parameters takes a dict or a Gluon ParameterDict, "
                                   f"got {type(params).__name__}.")
    if prefix is not None and not isinstance(prefix, str):
        raise InvalidArgumentError(f"prefix must be a str, got {type(prefix).__name__}.")
    if size() == 1:
        return
    prefix = prefix or ""
    tensors = []
    for name, p in sorted(params.items(), key=lambda item: str(item[0])):
        full_name = prefix + str(name)
        if isinstance(p, mx.gluon.Parameter):
            try:
                tensors.append((p.data(), full_name))
            except mx.gluon.parameter.DeferredInitializationError:
                _broadcast_after_init(p, root_rank, full_name)
        elif isinstance(p, mx.nd.NDArray):
            tensors.append((p, full_name))
        else:
            raise InvalidArgumentError(f"broadcast_parameters: entry {name!r} is a "
                                       f"{type(p).__name__}, not an NDArray or a Parameter.")
    for tensor, full_name in tensors:
        broadcast_(tensor, root_rank, name=full_name)


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """Returns `obj` of `root_rank` on every rank of `process_set` (serialized
    with cloudpickle; other ranks' `obj` is ignored). Blocks. Two broadcasts,
    named '<name>.sz' and '<name>.t' (see horovod_accel/common/objects.py for
    unnamed calls)."""
    size_name, data_name = object_op_names("broadcast_object", name)

    def broadcast_size(n):
        sz = mx.nd.array([n], dtype="int64")
        broadcast_(sz, root_rank, size_name, process_set=process_set)
        return int(sz.asnumpy()[0])

    def broadcast_bytes(data, n):
        if data is None:
            payload = mx.nd.empty((n,), dtype="uint8")
        else:
            payload = mx.nd.array(np.frombuffer(data, dtype=np.uint8), dtype="uint8")
        broadcast_(payload, root_rank, data_name, process_set=process_set)
        return payload.asnumpy().tobytes()

    return broadcast_object_with(obj, rank() == root_rank, broadcast_size, broadcast_bytes)


def allgather_object(obj, name=None, process_set=global_process_set):
    """Returns the list of every set rank's `obj`, in set-rank order
    (serialized with cloudpickle; objects may differ in type and size).
    Blocks."""
    size_name, data_name = object_op_names("allgather_object", name)
    return allgather_object_with(
        obj,
        lambda n: allgather(mx.nd.array([n], dtype="int64"), name=size_name,
                            process_set=process_set).asnumpy().tolist(),
        lambda data: allgather(mx.nd.array(np.frombuffer(data, dtype=np.uint8), dtype="uint8"),
                               name=data_name, process_set=process_set).asnumpy().tobytes())
