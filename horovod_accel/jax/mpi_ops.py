"""horovod.jax's collectives over JAX arrays, plus the basic API (init,
size, rank, build flags, ...; bound in common/basic_names.py) and process
sets.

Contract of every array op here:
- Arguments: jax.Arrays (or tracers), numpy arrays or Python numbers
  (converted with jnp.asarray; arrays.py). Each call checks them first and
  raises ValueError with what to change for an unsupported dtype (complex,
  uint32, ...), a reduction of bool arrays, an unknown op, a broadcast root
  outside the job or the process set, bad alltoall splits, a scalar where
  dim 0 is needed, or a process set that is not registered or that this
  rank is not a member of; NotImplementedError (a RuntimeError, as the
  other adapters) for Adasum outside an allreduce of the global set.
  Nothing is submitted then.
- Dispatch: when any argument is being traced (inside jax.jit, grad, vmap:
  `xla_ops.is_traced`), the op is staged into the computation through
  horovod_accel/jax/xla_ops.py and runs, in program order, each time the
  computation runs; otherwise it runs now on the eager path (eager_ops.py):
  it blocks until the collective is done. Both return new arrays (JAX
  arrays are immutable); inputs are never modified.
- A failed collective (a cross-rank mismatch, a lost peer, shutdown) raises
  HorovodInternalError on the eager path, with the core's message naming
  the tensor; inside jit the computation fails with
  jax.errors.JaxRuntimeError whose message holds "horovod_accel:" and the
  core's message.
- Names: ops are matched across ranks by `name` ("<op>.<name>"), or by
  per-(op, process set) counters when no name is given (common/handles.py).
- Average divides by the process set's size in the core; integer results
  of scaling and averaging are truncated. Broadcast roots are global ranks.

barrier() and join() take no arrays: they run when called, also when
called while jit traces a function.
"""
import jax
import jax.numpy as jnp
import numpy as np

from horovod_accel.common import basic_names as _basic_names
from horovod_accel.common.basic_names import *  # noqa: F401,F403 (upstream's basics, re-exported)
from horovod_accel.common.basic_names import (REDUCE_OP_NAMES,
                                              handle_average_backwards_compatibility)
from horovod_accel.common.basics import HorovodBasics
from horovod_accel.common.default_runtime import DEFAULT_RUNTIME
from horovod_accel.common.exceptions import HorovodInternalError  # noqa: F401 (re-export)
from horovod_accel.common.process_sets import (ProcessSet, add_process_set,  # noqa: F401
                                               global_process_set, registered_id,
                                               remove_process_set)
from horovod_accel.jax import arrays as _a
from horovod_accel.jax import eager_ops as _eager

_Average, _Adasum = HorovodBasics.Average, HorovodBasics.Adasum

# ---------------------------------------------------------------- checks and dispatch


def _traced_ops(*trees):
    """The xla_ops module when any leaf of `trees` is being traced
    (xla_ops.is_traced), else None: run eagerly. Imported on first use, so
    importing horovod.jax stays cheap; it loads no library until a
    collective is traced (xla_link.py)."""
    from horovod_accel.jax import xla_ops  # noqa: PLC0415
    return xla_ops if xla_ops.is_traced(*trees) else None


def _one(tensor, what="the tensor"):
    """(JAX value, dtype code) of an op's array argument."""
    x = _a.as_array(tensor, what)
    return x, _a.dtype_code(x, what)


def _group(tensors, op_name):
    """([JAX values], [dtype codes]) of a grouped op's list argument."""
    if _a.is_array(tensors) or isinstance(tensors, (dict, str, bytes)) or \
            not hasattr(tensors, "__iter__"):
        raise ValueError(f"{op_name} takes a list of arrays, got a {type(tensors).__name__} (for "
                         f"a pytree pass jax.tree_util.tree_leaves(tree) and rebuild it with "
                         f"tree_unflatten).")
    pairs = [_one(t, f"tensor {i} of the group") for i, t in enumerate(tensors)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _member_set(process_set):
    """(runtime, process set id) of a registered set this rank belongs to;
    ValueError otherwise, or when Horovod is not initialized."""
    rt = DEFAULT_RUNTIME.initialized_runtime()
    ps_id = registered_id(process_set)
    if ps_id != 0 and not rt.process_set_included(ps_id):
        raise ValueError(f"This process (rank {rt.rank()}) is not a member of {process_set}; "
                         f"only its members may run collectives on it.")
    return rt, ps_id


def _reduce_op(op, op_name, ps_id, codes):
    """`op` checked for a reduction (op_name: the public op) of arrays with
    dtype `codes`."""
    if isinstance(op, bool) or not isinstance(op, (int, np.integer)) or \
            int(op) not in REDUCE_OP_NAMES:
        raise ValueError(f"{op_name}: op must be one of hvd.Average, hvd.Sum, hvd.Adasum, "
                         f"hvd.Min, hvd.Max or hvd.Product, got {op!r}.")
    op = int(op)
    if op == _Adasum:
        if not op_name.endswith("allreduce"):
            raise NotImplementedError(f"{op_name} does not support op=hvd.Adasum; use allreduce, "
                                      f"or op=hvd.Average / hvd.Sum.")
        if ps_id != 0:
            raise NotImplementedError("Adasum is only supported on the global process set.")
        if any(c not in _a.FLOATING for c in codes):
            raise ValueError(f"{op_name} with op=hvd.Adasum needs floating-point arrays "
                             f"(float16, bfloat16, float32 or float64); convert them or use "
                             f"op=hvd.Sum.")
    if _a.BOOL in codes:
        raise ValueError(f"{op_name} cannot reduce bool arrays; convert them to an integer type "
                         f"first (x.astype(jnp.int32)).")
    return op


def _scales(prescale_factor, postscale_factor):
    try:
        return float(prescale_factor), float(postscale_factor)
    except (TypeError, ValueError, jax.errors.ConcretizationTypeError):
        raise ValueError(f"prescale_factor and postscale_factor must be Python numbers, got "
                         f"{prescale_factor!r} and {postscale_factor!r}.") from None


def _name(name):
    return None if name is None else str(name)


def _has_rows(xs, op_name):
    for x in xs:
        if x.ndim == 0:
            raise ValueError(f"{op_name} needs arrays with at least one dimension (dim 0 is "
                             f"gathered, split or scattered), got a scalar; use x.reshape(1).")


def _root(root_rank, rt, ps_id, process_set):
    if isinstance(root_rank, bool) or not isinstance(root_rank, (int, np.integer)):
        raise ValueError(f"root_rank must be an int (a global rank), got {root_rank!r}.")
    root_rank = int(root_rank)
    if not 0 <= root_rank < rt.size():
        raise ValueError(f"root_rank {root_rank} is out of range: the job has ranks 0 to "
                         f"{rt.size() - 1}.")
    if root_rank not in rt.process_set_ranks(ps_id):
        raise ValueError(f"root_rank {root_rank} is not a member of {process_set}; the root "
                         f"must be one of its ranks (a global rank).")
    return root_rank


# ---------------------------------------------------------------- allreduce


def allreduce(tensor, average=None, name=None, op=None, prescale_factor=1.0,
              postscale_factor=1.0, process_set=global_process_set):
    """Reduces `tensor` over the ranks of `process_set`; returns a new array
    of its shape and dtype. op: Average (default), Sum, Min, Max, Product or
    Adasum; `average` is deprecated (True: Average, False: Sum). The input
    is multiplied by prescale_factor before and the result by
    postscale_factor after the reduction."""
    x, code = _one(tensor)
    _, ps_id = _member_set(process_set)
    op = _reduce_op(handle_average_backwards_compatibility(op, average), "allreduce", ps_id,
                    [code])
    pre, post = _scales(prescale_factor, postscale_factor)
    xla = _traced_ops(x)
    if xla is not None:
        return xla.allreduce(x, op=op, prescale_factor=pre, postscale_factor=post,
                             name=_name(name), process_set_id=ps_id)
    return _eager.allreduce([x], False, _name(name), op, pre, post, ps_id)[0]


def grouped_allreduce(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=global_process_set):
    """allreduce of a list of arrays as one group (negotiated and fused
    together; tensor i is named '<base>_<i+1>of<n>'); a list of new
    arrays."""
    xs, codes = _group(tensors, "grouped_allreduce")
    _, ps_id = _member_set(process_set)
    op = _reduce_op(handle_average_backwards_compatibility(op, average), "grouped_allreduce",
                    ps_id, codes)
    pre, post = _scales(prescale_factor, postscale_factor)
    if not xs:
        return []
    xla = _traced_ops(xs)
    if xla is not None:
        return list(xla.grouped_allreduce(xs, op=op, prescale_factor=pre, postscale_factor=post,
                                          name=_name(name), process_set_id=ps_id))
    return _eager.allreduce(xs, True, _name(name), op, pre, post, ps_id)


# ---------------------------------------------------------------- allgather


def allgather(tensor, name=None, process_set=global_process_set):
    """Concatenates `tensor` of every rank of `process_set` along dim 0, in
    set-rank order; the other dims must match. Dim 0 may differ per rank
    eagerly; inside jit it must be equal on every rank."""
    x, _ = _one(tensor)
    _has_rows([x], "allgather")
    _, ps_id = _member_set(process_set)
    xla = _traced_ops(x)
    if xla is not None:
        return xla.allgather(x, name=_name(name), process_set_id=ps_id)
    return _eager.allgather([x], False, _name(name), ps_id)[0]


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    """allgather of a list of arrays as one group; a list of new arrays."""
    xs, _ = _group(tensors, "grouped_allgather")
    _has_rows(xs, "grouped_allgather")
    _, ps_id = _member_set(process_set)
    if not xs:
        return []
    xla = _traced_ops(xs)
    if xla is not None:
        return list(xla.grouped_allgather(xs, name=_name(name), process_set_id=ps_id))
    return _eager.allgather(xs, True, _name(name), ps_id)


# ---------------------------------------------------------------- broadcast


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """A new array holding `tensor` of global rank `root_rank` (a member of
    `process_set`); every rank passes an array of the same shape and
    dtype."""
    x, _ = _one(tensor)
    rt, ps_id = _member_set(process_set)
    root_rank = _root(root_rank, rt, ps_id, process_set)
    xla = _traced_ops(x)
    if xla is not None:
        return xla.broadcast(x, root_rank=root_rank, name=_name(name), process_set_id=ps_id)
    return _eager.broadcast(x, root_rank, _name(name), ps_id)


# ---------------------------------------------------------------- alltoall


def _splits_list(splits, d0, set_size):
    """alltoall splits as a list of ints ([] for None: an equal split),
    checked against dim 0 and the set size."""
    if splits is None:
        if d0 % set_size:
            raise ValueError(f"alltoall without splits sends equal blocks: dim 0 ({d0}) must be "
                             f"divisible by the number of ranks ({set_size}); pass splits.")
        return []
    if _a.is_array(splits):
        if isinstance(splits, jax.core.Tracer):
            raise ValueError("alltoall splits must be concrete (a list of ints or an array "
                             "outside jax.jit), not a traced value.")
        arr = np.asarray(splits)
        if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"alltoall splits must be a 1-D integer array, got dtype "
                             f"{arr.dtype} with shape {arr.shape}.")
        out = [int(s) for s in arr.tolist()]
    else:
        try:
            out = [int(s) for s in splits]
        except (TypeError, ValueError):
            raise ValueError(f"alltoall splits must be a list of ints or a 1-D integer array, "
                             f"got {splits!r}.") from None
    if len(out) != set_size or any(s < 0 for s in out) or sum(out) != d0:
        raise ValueError(f"alltoall splits {out} must have one entry >= 0 per rank of the "
                         f"process set ({set_size}) and sum to dim 0 ({d0}).")
    return out


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Sends rows [sum(splits[:i]), sum(splits[:i+1])) of dim 0 to set rank i
    and concatenates the blocks received, in set-rank order. splits: None
    (an equal split), a list of ints or a 1-D integer array. Returns the
    output array, or (output, received_splits) when `splits` is given:
    the rows received from each rank, an array of the dtype of `splits`
    when that is an array, else int32. Inside jit only the equal split
    works (the output's shape must be known when compiling)."""
    x, _ = _one(tensor)
    _has_rows([x], "alltoall")
    rt, ps_id = _member_set(process_set)
    send_splits = _splits_list(splits, x.shape[0], rt.process_set_size(ps_id))
    xla = _traced_ops(x)
    if xla is not None:
        if splits is not None:
            raise ValueError("alltoall with splits does not work inside jax.jit: the output's "
                             "shape depends on every rank's splits, which jit must know when it "
                             "compiles. Call it outside jit, or use splits=None (equal blocks).")
        return xla.alltoall(x, name=_name(name), process_set_id=ps_id)
    out, received = _eager.alltoall(x, send_splits, _name(name), ps_id)
    if splits is None:
        return out
    dtype = np.asarray(splits).dtype if _a.is_array(splits) else np.int32
    return out, jnp.asarray(np.asarray(received, dtype=dtype))


# ---------------------------------------------------------------- reducescatter


def reducescatter(tensor, op=_Average, name=None, process_set=global_process_set,
                  prescale_factor=1.0, postscale_factor=1.0):
    """Reduces `tensor` (same shape on every rank) over `process_set` and
    returns this rank's share of the result's rows: d0 // n rows, plus one
    for the lowest d0 % n set ranks. op: Average (default), Sum, Min, Max
    or Product."""
    x, code = _one(tensor)
    _has_rows([x], "reducescatter")
    _, ps_id = _member_set(process_set)
    op = _reduce_op(op, "reducescatter", ps_id, [code])
    pre, post = _scales(prescale_factor, postscale_factor)
    xla = _traced_ops(x)
    if xla is not None:
        return xla.reducescatter(x, op=op, prescale_factor=pre, postscale_factor=post,
                                 name=_name(name), process_set_id=ps_id)
    return _eager.reducescatter([x], False, _name(name), op, pre, post, ps_id)[0]


def grouped_reducescatter(tensors, op=_Average, name=None, process_set=global_process_set,
                          prescale_factor=1.0, postscale_factor=1.0):
    """reducescatter of a list of arrays as one group; a list of new
    arrays."""
    xs, codes = _group(tensors, "grouped_reducescatter")
    _has_rows(xs, "grouped_reducescatter")
    _, ps_id = _member_set(process_set)
    op = _reduce_op(op, "grouped_reducescatter", ps_id, codes)
    pre, post = _scales(prescale_factor, postscale_factor)
    if not xs:
        return []
    xla = _traced_ops(xs)
    if xla is not None:
        return list(xla.grouped_reducescatter(xs, op=op, prescale_factor=pre,
                                              postscale_factor=post, name=_name(name),
                                              process_set_id=ps_id))
    return _eager.reducescatter(xs, True, _name(name), op, pre, post, ps_id)


# ---------------------------------------------------------------- join / barrier


def join(device=-1):
    """Marks this rank as finished with its data and blocks until every rank
    has joined; until then the other ranks' allreduces proceed with this
    rank contributing zeros (other ops involving a joined rank fail).
    Returns the global rank that joined last. device: -1 (host memory, where
    the eager ops run; the only value taken)."""
    if isinstance(device, bool) or device != -1:
        raise ValueError(f"join(device={device!r}): horovod.jax's eager collectives run on host "
                         f"memory; call join() (device=-1).")
    DEFAULT_RUNTIME.initialized_runtime()
    return _eager.join()


def barrier(process_set=global_process_set):
    """Blocks until every rank of `process_set` has reached the barrier."""
    _, ps_id = _member_set(process_set)
    _eager.barrier(ps_id)


__all__ = _basic_names.BASICS + _basic_names.REDUCE_OPS + [
    "ProcessSet", "global_process_set", "add_process_set", "remove_process_set",
    "HorovodInternalError",
    "allreduce", "grouped_allreduce", "allgather", "grouped_allgather", "broadcast",
    "alltoall", "reducescatter", "grouped_reducescatter", "join", "barrier",
]
