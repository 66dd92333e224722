"""What the torch collectives do while `torch.compile` traces them.

Every public op of ops_*.py starts with `if _tracing():` (`tracing` below)
and, when tracing, calls the function of the same name here instead of its
eager body. These functions only take arguments apart and call the
`horovod::` custom ops (custom_ops.py), so Dynamo records one graph node per
collective and no graph break; the eager path is untouched (one flag check).

Asynchronous ops return a `TracedHandle`, which `synchronize()` turns into a
`horovod::wait` node. In-place variants (`allreduce_async_`, `broadcast_`,
...) reduce into a new tensor and copy it into the argument at synchronize:
a compiled graph's ops are functional, so the core cannot write into a
tensor the graph owns.

Not traced (Dynamo breaks the graph there and runs them eagerly):
`sparse_allreduce_async`, `join`, `barrier`, the object ops, `poll()` of an
eager handle and `synchronize()` of a handle created outside the graph.
docs/torch_compile.md says what traces and what breaks.
"""
import functools
import sys
from typing import NamedTuple, Optional

import torch

from horovod_accel.common.basics import HorovodBasics
from horovod_accel.common.default_runtime import DEFAULT_RUNTIME
from horovod_accel.common.handles import poll as _eager_poll
from horovod_accel.common.handles import synchronize as _eager_synchronize
from horovod_accel.common.process_sets import registered_id

# Whether Dynamo is tracing the caller: what every public op checks first.
# is_dynamo_compiling() is `return False` in eager mode (Dynamo folds it to
# True while tracing), a quarter of is_compiling()'s cost, which is a share
# of a small op (benchmarks/README.md, "A/B for torch.compile support").
# torch < 2.3 has no torch.compiler: nothing traces there.
tracing = getattr(getattr(torch, "compiler", None), "is_dynamo_compiling", None) or (lambda: False)

# The ops are looked up when called; horovod_accel.torch's __init__ registers
# them (custom_ops.py imports the eager ops, which import this module).
_hvd = torch.ops.horovod


@functools.cache
def _eager(fn):
    """fn as traced code calls it: a clean graph break, fn running eagerly
    (for handles made outside the compiled region). Wrapped on first use:
    importing torch._dynamo costs a second, and eager users never need it."""
    return torch._dynamo.disable(fn)


def constant_per_job(fn):
    """fn (rank, size, ...) as Dynamo sees it: a constant, read when the graph
    is traced instead of a graph break. It is one for the whole job; a new
    job (init() after shutdown(), an elastic reset) drops every compiled
    graph (`forget_compiled_graphs`), so none keeps another job's values."""
    def per_job():
        return fn()
    functools.update_wrapper(per_job, fn)
    # What torch.compiler.assume_constant_result does, without its import of
    # torch._dynamo (a second at `import horovod.torch`, for every process).
    per_job._dynamo_marked_constant = True
    return per_job


def forget_compiled_graphs():
    """After init() and shutdown(): graphs traced during the previous job
    hold its rank, size and process-set shapes, so Dynamo's caches are reset
    (graphs recompile on their next call). Nothing to do if nothing was
    ever compiled in this process."""
    dynamo = sys.modules.get("torch._dynamo")
    if dynamo is not None and not sys.is_finalizing():   # at exit there is nothing to run again
        dynamo.reset()


DEFAULT_RUNTIME.add_reset_listener(forget_compiled_graphs)


class TracedHandle(NamedTuple):
    """The handle of an op started inside a compiled region."""
    handle: Optional[torch.Tensor]   # horovod::<op>_start's result; None: an empty group
    inputs: list                     # what the core reads; kept alive until the wait
    kind: str                        # how wait's outputs are shaped (custom_ops._FAKE_WAIT)
    process_set_id: int
    targets: Optional[list]          # in-place variants: the tensors the results go into
    form: str                        # what synchronize returns: "tensor", "list" or "pair"


def _name(name):
    return None if name is None else str(name)


def _check_adasum(op, ps_id):
    if op == HorovodBasics.Adasum and ps_id != 0:
        raise NotImplementedError("Adasum does not support non-global process sets yet.")


def _started(start, args, inputs, kind, ps_id, targets, form):
    return TracedHandle(start(*args), inputs, kind, ps_id, targets, form)


# ---------------------------------------------------------------- blocking


def allreduce(tensor, name, compression, op, prescale_factor, postscale_factor, process_set):
    ps_id = registered_id(process_set)
    _check_adasum(op, ps_id)
    compressed, ctx = compression.compress(tensor)
    reduced = _hvd.allreduce(compressed, _name(name), int(op), float(prescale_factor),
                             float(postscale_factor), ps_id)
    return compression.decompress(reduced, ctx)


def _compressed_group(op_fn, tensors, name, compression, op, prescale_factor, postscale_factor,
                      ps_id):
    """A grouped reduction (op_fn: horovod::grouped_allreduce or
    grouped_reducescatter) of compressed tensors, decompressed."""
    tensors = list(tensors)
    if not tensors:
        return []
    compressed, ctxs = zip(*[compression.compress(t) for t in tensors])
    reduced = op_fn(list(compressed), _name(name), int(op), float(prescale_factor),
                    float(postscale_factor), ps_id)
    return [compression.decompress(t, c) for t, c in zip(reduced, ctxs)]


def grouped_allreduce(tensors, name, compression, op, prescale_factor, postscale_factor,
                      process_set):
    ps_id = registered_id(process_set)
    _check_adasum(op, ps_id)
    return _compressed_group(_hvd.grouped_allreduce, tensors, name, compression, op,
                             prescale_factor, postscale_factor, ps_id)


def allgather(tensor, name, process_set):
    return _hvd.allgather(tensor, _name(name), registered_id(process_set))


def grouped_allgather(tensors, name, process_set):
    ps_id = registered_id(process_set)
    tensors = list(tensors)
    return list(_hvd.grouped_allgather(tensors, _name(name), ps_id)) if tensors else []


def broadcast(tensor, root_rank, name, process_set):
    return _hvd.broadcast(tensor, int(root_rank), _name(name), registered_id(process_set))


def _splits_tensor(splits):
    """alltoall splits as the op takes them: None or an integer tensor (a list
    becomes an int32 CPU tensor, so the received splits are int32 CPU, as
    eager returns them for a list)."""
    if splits is None or isinstance(splits, torch.Tensor):
        return splits
    return torch.tensor(list(splits), dtype=torch.int32)


def alltoall(tensor, splits, name, process_set):
    output, received = _hvd.alltoall(tensor, _splits_tensor(splits), _name(name),
                                     registered_id(process_set))
    return output if splits is None else (output, received)


def reducescatter(tensor, name, compression, op, prescale_factor, postscale_factor, process_set):
    ps_id = registered_id(process_set)
    compressed, ctx = compression.compress(tensor)
    reduced = _hvd.reducescatter(compressed, _name(name), int(op), float(prescale_factor),
                                 float(postscale_factor), ps_id)
    return compression.decompress(reduced, ctx)


def grouped_reducescatter(tensors, name, compression, op, prescale_factor, postscale_factor,
                          process_set):
    return _compressed_group(_hvd.grouped_reducescatter, tensors, name, compression, op,
                             prescale_factor, postscale_factor, registered_id(process_set))


# ---------------------------------------------------------------- asynchronous
# Inputs are detached: an asynchronous op has no gradient (as eager).


def allreduce_async(tensor, in_place, name, op, prescale_factor, postscale_factor, process_set):
    ps_id = registered_id(process_set)
    _check_adasum(op, ps_id)
    t = tensor.detach()
    return _started(_hvd.allreduce_start, (t, _name(name), int(op), float(prescale_factor),
                                           float(postscale_factor), ps_id),
                    [t], "same", ps_id, [tensor] if in_place else None, "tensor")


def grouped_allreduce_async(tensors, in_place, name, op, prescale_factor, postscale_factor,
                            process_set):
    ps_id = registered_id(process_set)
    _check_adasum(op, ps_id)
    tensors = list(tensors)
    ts = [t.detach() for t in tensors]
    if not ts:
        return TracedHandle(None, [], "same", ps_id, None, "list")
    return _started(_hvd.grouped_allreduce_start, (ts, _name(name), int(op),
                                                   float(prescale_factor),
                                                   float(postscale_factor), ps_id),
                    ts, "same", ps_id, tensors if in_place else None, "list")


def allgather_async(tensor, name, process_set):
    ps_id = registered_id(process_set)
    t = tensor.detach()
    return _started(_hvd.allgather_start, (t, _name(name), ps_id), [t], "gathered", ps_id, None,
                    "tensor")


def grouped_allgather_async(tensors, name, process_set):
    ps_id = registered_id(process_set)
    ts = [t.detach() for t in tensors]
    if not ts:
        return TracedHandle(None, [], "gathered", ps_id, None, "list")
    return _started(_hvd.grouped_allgather_start, (ts, _name(name), ps_id), ts, "gathered", ps_id,
                    None, "list")


def broadcast_async(tensor, in_place, root_rank, name, process_set):
    ps_id = registered_id(process_set)
    t = tensor.detach()
    return _started(_hvd.broadcast_start, (t, int(root_rank), _name(name), ps_id), [t], "same",
                    ps_id, [tensor] if in_place else None, "tensor")


def alltoall_async(tensor, splits, name, process_set):
    ps_id = registered_id(process_set)
    t = tensor.detach()
    splits = _splits_tensor(splits)
    inputs = [t] if splits is None else [t, splits]
    return _started(_hvd.alltoall_start, (t, splits, _name(name), ps_id), inputs, "alltoall",
                    ps_id, None, "pair")


def reducescatter_async(tensor, name, op, process_set, prescale_factor, postscale_factor):
    ps_id = registered_id(process_set)
    t = tensor.detach()
    return _started(_hvd.reducescatter_start, (t, _name(name), int(op), float(prescale_factor),
                                               float(postscale_factor), ps_id),
                    [t], "scattered", ps_id, None, "tensor")


def grouped_reducescatter_async(tensors, name, op, process_set, prescale_factor,
                                postscale_factor):
    ps_id = registered_id(process_set)
    ts = [t.detach() for t in tensors]
    if not ts:
        return TracedHandle(None, [], "scattered", ps_id, None, "list")
    return _started(_hvd.grouped_reducescatter_start, (ts, _name(name), int(op),
                                                       float(prescale_factor),
                                                       float(postscale_factor), ps_id),
                    ts, "scattered", ps_id, None, "list")


# ---------------------------------------------------------------- handles


def synchronize(handle):
    """horovod::wait of a TracedHandle; a handle made outside the graph is
    waited for eagerly (a graph break)."""
    if not isinstance(handle, TracedHandle):
        return _eager(_eager_synchronize)(handle)
    if handle.handle is None:
        return []
    outs = _hvd.wait(handle.handle, handle.inputs, handle.kind, handle.process_set_id)
    if handle.targets is not None:
        with torch.no_grad():
            for target, out in zip(handle.targets, outs):
                target.copy_(out)
        outs = handle.targets
    if handle.form == "tensor":
        return outs[0]
    if handle.form == "pair":
        return outs[0], outs[1]
    return list(outs)


def poll(handle):
    """A TracedHandle's poll is a bool tensor (whether the op has completed
    when the graph runs); an eager handle's is polled eagerly."""
    if not isinstance(handle, TracedHandle):
        return _eager(_eager_poll)(handle)
    if handle.handle is None:
        return torch.tensor(True)
    return _hvd.poll(handle.handle)
