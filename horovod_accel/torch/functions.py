"""Broadcasting model/optimizer state and Python objects (upstream
`horovod.torch.functions`).

Every function here is collective: all ranks of `process_set` must call it,
in the same order, with the same `root_rank` (a *global* rank) and name.
They block until done and raise HorovodInternalError if a collective fails.
"""
import ctypes

import torch

from horovod_accel.common.objects import (allgather_object_with, broadcast_object_with,
                                           object_op_names)
from horovod_accel.common.process_sets import global_process_set
from horovod_accel.torch import tensors as _t
from horovod_accel.torch.mpi_ops import (allgather, broadcast_, broadcast_async_, rank,
                                         synchronize)


# torch.compile(model) returns a wrapper (OptimizedModule) holding the model as
# its `_orig_mod` submodule, so its state_dict() and named_parameters() names
# carry this component (`_orig_mod.fc.weight`; `block._orig_mod.fc.weight` for
# a compiled submodule).
_COMPILED_MODULE_COMPONENT = "_orig_mod"


def canonical_name(name):
    """`name` (of a parameter, buffer or state_dict entry) without the
    `_orig_mod` components torch.compile's wrapper adds, so a compiled and an
    uncompiled replica of a model give the core the same tensor names (ranks
    are matched by name). Non-string names are returned unchanged."""
    if not isinstance(name, str) or _COMPILED_MODULE_COMPONENT not in name:
        return name
    return ".".join(part for part in name.split(".") if part != _COMPILED_MODULE_COMPONENT)


def duplicate_names(originals, canonical):
    """The sorted names occurring more than once in `canonical` (the
    canonical_name() of each of `originals`), with a note when dropping
    `_orig_mod` made them collide: '' if there are none."""
    seen, dups = set(), set()
    for name in canonical:
        (dups if name in seen else seen).add(name)
    if not dups:
        return ""
    text = ", ".join(sorted(map(str, dups)))
    if any(isinstance(n, str) and _COMPILED_MODULE_COMPONENT in n.split(".") for n in originals):
        text += (f" (names are compared without torch.compile's '{_COMPILED_MODULE_COMPONENT}.' "
                 f"component: pass either the compiled model's names or the plain model's)")
    return text


def broadcast_parameters(params, root_rank, process_set=global_process_set):
    """Overwrites `params` on every rank with the values of `root_rank`, in place.

    params: a dict name -> tensor (e.g. `model.state_dict()`; broadcast in
    sorted name order, names become the core tensor names), or an iterable of
    (name, tensor) pairs (`model.named_parameters()`) or of bare tensors
    (`model.parameters()`, unnamed). All tensors are broadcast asynchronously,
    then waited for. Names are taken without the `_orig_mod.` component of a
    torch.compile'd model (canonical_name()), so ranks agree whether or not
    they compiled theirs; names must be unique (ValueError).
    """
    if isinstance(params, dict):
        originals = list(params)
        items = [(canonical_name(name), p) for name, p in params.items()]
    elif isinstance(params, (str, bytes)) or not hasattr(params, "__iter__"):
        raise ValueError(f"broadcast_parameters takes a dict (state_dict()) or a list of (name, "
                         f"tensor) pairs (named_parameters()), got {type(params).__name__}.")
    else:
        items = [p if isinstance(p, tuple) else (None, p) for p in params]
        originals = [name for name, _ in items if name is not None]
        items = [(canonical_name(name), p) for name, p in items]
    for name, p in items:  # validate everything before submitting anything
        if not isinstance(p, torch.Tensor):
            raise ValueError(f"broadcast_parameters: entry {name!r} is a {type(p).__name__}, not a "
                             f"torch.Tensor.")
    dups = duplicate_names(originals, [name for name, _ in items if name is not None])
    if dups:
        raise ValueError(f"broadcast_parameters: tensor names must be unique. Found duplicates: "
                         f"{dups}")
    if isinstance(params, dict):
        items.sort(key=lambda item: item[0])
    handles = [broadcast_async_(p, root_rank, name, process_set=process_set) for name, p in items]
    for handle in handles:
        synchronize(handle)


# ---------------------------------------------------------------- objects


def _bytes_tensor(data, n):
    """A uint8 tensor of `data` (bytes), or of n uninitialised bytes."""
    if data is None:
        return torch.empty(n, dtype=torch.uint8)
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


def _tensor_bytes(t):
    """The bytes of a contiguous CPU uint8 tensor. Not `t.numpy()`: torch
    does not require NumPy, and neither do Horovod's object ops."""
    return ctypes.string_at(t.data_ptr(), t.numel()) if t.numel() else b""


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """Returns `obj` of `root_rank` on every rank of `process_set`
    (serialized with cloudpickle; other ranks' `obj` is ignored, may be None).

    Two broadcasts: the payload size, then the bytes (named '<name>.sz' and
    '<name>.t'; see horovod_accel/common/objects.py for unnamed calls).
    """
    size_name, data_name = object_op_names("broadcast_object", name)

    def broadcast_size(n):
        sz = torch.tensor([n], dtype=torch.int64)
        broadcast_(sz, root_rank, size_name, process_set=process_set)
        return int(sz[0])

    def broadcast_bytes(data, n):
        payload = _bytes_tensor(data, n)
        broadcast_(payload, root_rank, data_name, process_set=process_set)
        return _tensor_bytes(payload)

    return broadcast_object_with(obj, rank() == root_rank, broadcast_size, broadcast_bytes)


def allgather_object(obj, name=None, process_set=global_process_set):
    """Returns the list of every set rank's `obj`, in set-rank order
    (serialized with cloudpickle; objects may differ in type and size)."""
    size_name, data_name = object_op_names("allgather_object", name)
    return allgather_object_with(
        obj,
        lambda n: allgather(torch.tensor([n], dtype=torch.int64), name=size_name,
                            process_set=process_set).tolist(),
        lambda data: _tensor_bytes(allgather(_bytes_tensor(data, 0), name=data_name,
                                             process_set=process_set)))


# ---------------------------------------------------------------- optimizer state


class _TensorSlot:
    """Stands in for a tensor of the root's optimizer state_dict while its
    structure is broadcast as an object; the data follows by tensor broadcast."""

    __slots__ = ("index", "shape", "dtype", "device_type")

    def __init__(self, index, tensor):
        self.index = index
        self.shape = tuple(tensor.shape)
        self.dtype = tensor.dtype
        self.device_type = tensor.device.type

    def __getstate__(self):
        return (self.index, self.shape, self.dtype, self.device_type)

    def __setstate__(self, state):
        self.index, self.shape, self.dtype, self.device_type = state

    def allocate(self):
        device = "cpu" if self.device_type == "cpu" else torch.device(self.device_type)
        return torch.empty(self.shape, dtype=self.dtype, device=device)


def _broadcastable(x):
    return (isinstance(x, torch.Tensor) and x.layout == torch.strided
            and x.dtype in _t.DTYPE_CODES)


def _map_structure(x, fn):
    """Applies fn to every leaf of nested dicts/lists/tuples (fn returns the
    leaf itself for leaves it does not replace)."""
    if isinstance(x, dict):
        return {k: _map_structure(v, fn) for k, v in x.items()}
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_map_structure(v, fn) for v in x)
    return fn(x)


def _zero_gradients(optimizer):
    """What upstream leaves behind when it initializes an optimizer without
    state: a zero gradient (sparse for SparseAdam) on every parameter that
    requires one. Upstream scripts read `.grad` right afterwards."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.requires_grad:
                grad = torch.zeros_like(p, memory_format=torch.preserve_format)
                p.grad = grad.to_sparse() if isinstance(optimizer, torch.optim.SparseAdam) else grad


def broadcast_optimizer_state(optimizer, root_rank, model=None, process_set=global_process_set):
    """Makes `optimizer`'s state and hyper-parameters (param_groups) on every
    rank equal to those of `root_rank`.

    Works for every torch.optim optimizer (and DistributedOptimizer) except
    LBFGS (ValueError). The root's `state_dict()` structure is broadcast as
    an object, its tensors (moments, `step`, tensor learning rates, ...) by
    tensor broadcasts, and non-root ranks `load_state_dict()` the result, so
    torch casts the state to each parameter's device/dtype. Optimizers whose
    state is empty until the first step end with equal (empty or root's)
    state everywhere; unlike upstream, no fake zero-gradient step is taken,
    so parameters and step counts are left untouched. As upstream, if this
    rank's optimizer has no state yet, every parameter that requires a
    gradient is left with a zero `.grad` (replacing any it had). Each rank
    keeps its own `param_names` (torch >= 2.6 optimizers built from named
    parameters), e.g. with or without a torch.compile'd model's `_orig_mod.`.

    model: accepted for upstream compatibility; not needed.
    """
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("cannot broadcast torch.optim.LBFGS state (not supported, as upstream): "
                         "its curvature history is built by closure-driven steps. Construct LBFGS "
                         "identically on every rank after broadcast_parameters() instead.")
    if not optimizer.state:
        _zero_gradients(optimizer)
    is_root = rank() == root_rank
    tensors = []
    if is_root:
        def to_slot(x):
            if _broadcastable(x):
                tensors.append(x.detach())
                return _TensorSlot(len(tensors) - 1, x)
            return x

        structure = _map_structure(optimizer.state_dict(), to_slot)
    else:
        structure = None
    structure = broadcast_object(structure, root_rank, name="optimizer_state.structure",
                                 process_set=process_set)
    if not is_root:
        slots = []
        _map_structure(structure, lambda x: slots.append(x) if isinstance(x, _TensorSlot) else x)
        tensors = [None] * len(slots)
        for slot in slots:
            tensors[slot.index] = slot.allocate()
    handles = [broadcast_async_(t, root_rank, name=f"optimizer_state.{i}", process_set=process_set)
               for i, t in enumerate(tensors)]
    for handle in handles:
        synchronize(handle)
    if not is_root:
        state_dict = _map_structure(
            structure, lambda x: tensors[x.index] if isinstance(x, _TensorSlot) else x)
        _keep_own_param_names(optimizer, state_dict)
        optimizer.load_state_dict(state_dict)


def _keep_own_param_names(optimizer, state_dict):
    """An optimizer built from named parameters (torch >= 2.6) keeps their
    names per param group ('param_names'), and load_state_dict() would adopt
    the root's. They label this rank's own parameters (the root's carry
    '_orig_mod.' where only the root compiled its model), so each rank keeps
    its own names, or none."""
    for group, loaded in zip(optimizer.param_groups, state_dict.get("param_groups", ()),
                             strict=False):    # unequal lengths: load_state_dict() says so
        if "param_names" in group:
            loaded["param_names"] = list(group["param_names"])
        else:
            loaded.pop("param_names", None)
