"""broadcast_parameters, broadcast_object and allgather_object for JAX.

Every function here is collective: all ranks (of the process set) must call
it in the same order with the same root_rank and names.
"""
import jax
import jax.numpy as jnp
import numpy as np

from horovod_accel.common.basic_names import rank
from horovod_accel.common.objects import (allgather_object_with, broadcast_object_with,
                                           object_op_names)
from horovod_accel.common.process_sets import global_process_set
from horovod_accel.jax import arrays as _a
from horovod_accel.jax import eager_ops as _eager
from horovod_accel.jax.mpi_ops import _member_set, _root, _traced_ops, allgather, broadcast


def broadcast_parameters(params, root_rank=0, process_set=global_process_set):
    """Returns `params` (any pytree: dicts, lists, tuples, namedtuples, ...)
    with every array leaf replaced by the value of global rank `root_rank`;
    JAX arrays are immutable, so the caller uses the returned tree (e.g.
    `params = hvd.broadcast_parameters(params)`). Leaves that are not arrays
    (Python numbers, strings, None, ...) pass through untouched: send those
    with broadcast_object. A numpy leaf comes back as a new numpy array of
    its dtype (float64 too, whether or not jax_enable_x64 is set), a JAX
    leaf as a new jax.Array of its dtype and placement (inside jit every
    result is a traced value).

    Leaves are broadcast in the tree's flattening order, each named after
    its path in the tree ('broadcast.broadcast_parameters' + the path, e.g.
    "['dense']['kernel']"), so every rank must pass a tree of the same
    structure. Eagerly, every leaf is in flight at once, then waited for;
    inside jit each leaf is one staged broadcast."""
    leaves, treedef = jax.tree_util.tree_flatten_with_path(params)
    rt, ps_id = _member_set(process_set)
    root_rank = _root(root_rank, rt, ps_id, process_set)
    picked = []  # (index in leaves, leaf, name): checked before anything is submitted
    for i, (path, leaf) in enumerate(leaves):
        if _a.is_array(leaf):
            _a.dtype_code(leaf, f"leaf {jax.tree_util.keystr(path)}")
            picked.append((i, leaf, "broadcast_parameters" + jax.tree_util.keystr(path)))
    values = [leaf for _, leaf in leaves]
    xla = _traced_ops([x for _, x, _ in picked])
    if xla is not None:
        results = [xla.broadcast(jnp.asarray(x), root_rank=root_rank, name=where,
                                 process_set_id=ps_id) for _, x, where in picked]
    else:  # numpy leaves stay numpy arrays of their dtype (arrays.from_host)
        results = _eager.finish_all([_eager.start_broadcast(x, root_rank, where, ps_id)
                                     for _, x, where in picked])
    for (i, _, _), result in zip(picked, results):
        values[i] = result
    return jax.tree_util.tree_unflatten(treedef, values)


def _size_words(n):
    """Payload size n as two int32 words (int64 arrays need jax_enable_x64)."""
    return np.array([n >> 31, n & 0x7FFFFFFF], dtype=np.int32)


def _size_of(words):
    return (int(words[0]) << 31) | int(words[1])


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """Returns `obj` of `root_rank` on every rank of `process_set`
    (serialized with cloudpickle; other ranks' `obj` is ignored). Blocks.
    Two broadcasts, named '<name>.sz' and '<name>.t' (see
    horovod_accel/common/objects.py for unnamed calls)."""
    size_name, data_name = object_op_names("broadcast_object", name)

    def broadcast_size(n):
        sz = broadcast(_size_words(n), root_rank, size_name, process_set=process_set)
        return _size_of(np.asarray(sz))

    def broadcast_bytes(data, n):
        payload = np.zeros(n, np.uint8) if data is None else np.frombuffer(data, np.uint8)
        return np.asarray(broadcast(payload, root_rank, data_name,
                                    process_set=process_set)).tobytes()

    return broadcast_object_with(obj, rank() == root_rank, broadcast_size, broadcast_bytes)


def allgather_object(obj, name=None, process_set=global_process_set):
    """Returns the list of every set rank's `obj`, in set-rank order
    (serialized with cloudpickle; objects may differ in type and size).
    Blocks."""
    size_name, data_name = object_op_names("allgather_object", name)
    return allgather_object_with(
        obj,
        lambda n: [_size_of(words) for words in np.asarray(
            allgather(_size_words(n)[None], name=size_name, process_set=process_set))],
        lambda data: np.asarray(allgather(np.frombuffer(data, np.uint8), name=data_name,
                                          process_set=process_set)).tobytes())
