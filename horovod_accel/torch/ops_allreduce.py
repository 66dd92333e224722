"""allreduce and grouped_allreduce (async, in-place and autograd variants).

Contracts shared by every op here:
- enqueue never blocks; it returns a handle for poll()/synchronize().
- Bad arguments and a name already in flight on this rank raise ValueError at
  enqueue; cross-rank mismatches raise HorovodInternalError at synchronize.
- Non-contiguous inputs work: the core gets a contiguous copy and in-place
  variants copy the result back into the original tensor.
- Average is computed by the core (Sum, then x 1/process-set size, after
  postscale); integer results of scaling are truncated.
- While torch.compile's Dynamo traces the caller, every public op emits a
  `horovod::` custom op instead of running (traced.py, custom_ops.py,
  docs/torch_compile.md); the eager path costs one flag check more.
- Adasum (docs/design/adasum.md) works on floating-point CPU tensors of the
  global process set, at any number of ranks; another process set raises
  NotImplementedError like upstream, an integer tensor ValueError.
"""
import torch

from horovod_accel.common.basics import HorovodBasics
from horovod_accel.common.default_runtime import DEFAULT_RUNTIME
from horovod_accel.common.process_sets import global_process_set
from horovod_accel.common.util import get_average_backwards_compatibility_fun
from horovod_accel.common.process_sets import ProcessSet, registered_id
from horovod_accel.torch import tensors as _t
from horovod_accel.torch import traced as _traced
from horovod_accel.torch.traced import tracing as _tracing
from horovod_accel.torch.handles import synchronize
from horovod_accel.torch.compression import Compression
from horovod_accel.common.handles import KeepAlive, submit, submit_allreduce, submit_internal

handle_average_backwards_compatibility = get_average_backwards_compatibility_fun(HorovodBasics)


def _check_adasum(op, ps_id):
    if op == HorovodBasics.Adasum and ps_id != 0:
        raise NotImplementedError("Adasum does not support non-global process sets yet.")


_ADASUM = HorovodBasics.Adasum
_DTYPE_CODES = _t.DTYPE_CODES


def _allreduce_async(tensor, in_place, name, op, prescale_factor, postscale_factor, process_set):
    # The per-op path of every allreduce, written out for the common case (a
    # named, contiguous CPU tensor of a registered process set): no closures,
    # few calls and allocations. Each op's Python cost and garbage-collector
    # pressure is most of a small allreduce's time (benchmarks/allreduce.py's
    # async batch); every other case takes the general path below, which
    # raises the same errors.
    if (name is not None and process_set.__class__ is ProcessSet
            and isinstance(tensor, torch.Tensor) and tensor.is_cpu and tensor.is_contiguous()
            and op != _ADASUM):
        code = _DTYPE_CODES.get(tensor.dtype)
        ps_id = process_set.process_set_id  # None: not registered (raised below)
        if code is not None and ps_id is not None:
            rt = DEFAULT_RUNTIME.enqueue_runtime()
            ptr = tensor.data_ptr()
            if in_place:
                optr, entry = ptr, tensor
            else:
                out = _t.new_output(tensor)
                optr, entry = out.data_ptr(), KeepAlive(tensor, out)
            # op and the scale factors go to the binding as given: it takes
            # any int-like op and float-like factor (TypeError otherwise).
            return submit_allreduce("allreduce", name, rt.enqueue_allreduce, ps_id, ptr, optr,
                                    code, tensor.shape, -1, op, prescale_factor,
                                    postscale_factor, entry)
    ps_id = registered_id(process_set)
    _check_adasum(op, ps_id)
    rt = DEFAULT_RUNTIME.enqueue_runtime()
    dtype, device = _t.dtype_code(tensor), _t.device_id(tensor)
    inp = _t.as_input(tensor)
    if in_place:
        # The core writes into `inp`; a non-contiguous tensor's contiguous
        # copy is copied back into `tensor` at synchronize().
        out, keep, result = inp, inp, tensor
        finish = None if inp is tensor else _t.output_for(tensor, inp, True)[1]
    else:
        out = _t.new_output(inp)
        keep, result, finish = (inp, out), out, None
    return submit("allreduce", name, ps_id, rt.enqueue_allreduce, keep=keep, finish=finish,
                  result=result,
                  args=(ps_id, inp.data_ptr(), out.data_ptr(), dtype, inp.shape, device, op,
                        prescale_factor, postscale_factor))


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=global_process_set):
    """Starts reducing `tensor` over the ranks of `process_set` into a new
    tensor (the input is not modified). Ops are matched across ranks by
    `name` (auto-generated if None). op defaults to Average; `average` is
    deprecated. Returns a handle; synchronize(handle) returns the result."""
    if op is None or average is not None:
        op = handle_average_backwards_compatibility(op, average)
    if _tracing():
        return _traced.allreduce_async(tensor, False, name, op, prescale_factor, postscale_factor,
                                       process_set)
    return _allreduce_async(tensor, False, name, op, prescale_factor, postscale_factor, process_set)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, process_set=global_process_set):
    """Like allreduce_async, but the result is written into `tensor`;
    synchronize(handle) returns `tensor`."""
    if op is None or average is not None:
        op = handle_average_backwards_compatibility(op, average)
    if _tracing():
        return _traced.allreduce_async(tensor, True, name, op, prescale_factor, postscale_factor,
                                       process_set)
    return _allreduce_async(tensor, True, name, op, prescale_factor, postscale_factor, process_set)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=global_process_set):
    """Blocking in-place allreduce; returns `tensor`."""
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor,
                                        postscale_factor, process_set))


class HorovodAllreduce(torch.autograd.Function):
    """allreduce with gradient: backward allreduces the gradient with the same
    op, scale factors and process set."""

    @staticmethod
    def forward(ctx, tensor, name, op, prescale_factor, postscale_factor, process_set):
        ctx.op = op
        ctx.prescale_factor = prescale_factor
        ctx.postscale_factor = postscale_factor
        ctx.process_set = process_set
        return synchronize(_allreduce_async(tensor, False, name, op, prescale_factor,
                                            postscale_factor, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad = allreduce(grad_output, op=ctx.op, prescale_factor=ctx.prescale_factor,
                         postscale_factor=ctx.postscale_factor, process_set=ctx.process_set)
        return grad, None, None, None, None, None


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """Blocking allreduce returning a new tensor (input unchanged).
    Differentiable. `compression` compresses before and decompresses after
    the collective (e.g. Compression.fp16)."""
    op = handle_average_backwards_compatibility(op, average)
    if _tracing():
        return _traced.allreduce(tensor, name, compression, op, prescale_factor, postscale_factor,
                                 process_set)
    compressed, ctx = compression.compress(tensor)
    reduced = HorovodAllreduce.apply(compressed, name, op, prescale_factor, postscale_factor,
                                     process_set)
    return compression.decompress(reduced, ctx)


# ---------------------------------------------------------------- grouped


def _grouped_allreduce_async(tensors, in_place, name, op, prescale_factor, postscale_factor,
                             process_set):
    tensors = list(tensors)
    ps_id = registered_id(process_set)
    _check_adasum(op, ps_id)
    rt = DEFAULT_RUNTIME.initialized_runtime()
    if not tensors:
        return submit_internal("grouped_allreduce.empty", lambda: [], keep=(),
                               finish=lambda works: [])
    # Per tensor, this is the cost of a DistributedOptimizer bucket: no
    # closures or generators for the common case (contiguous, in place).
    dtypes = [_t.dtype_code(t) for t in tensors]
    device = _t.common_device(tensors)
    inps = [_t.as_input(t) for t in tensors]
    finish, result = None, tensors
    if not in_place:
        outs = result = [_t.new_output(i) for i in inps]
    else:
        outs = inps
        if any(i is not t for i, t in zip(inps, tensors)):
            # Non-contiguous tensors were reduced in contiguous copies.
            finish = lambda works: [_t.copy_back(t, i) for t, i in zip(tensors, inps)]  # noqa: E731
    return submit("grouped_allreduce", name, ps_id,
                  lambda names: rt.enqueue_grouped_allreduce(
                      names, ps_id, [i.data_ptr() for i in inps], [o.data_ptr() for o in outs],
                      dtypes, [i.shape for i in inps], device, op, prescale_factor,
                      postscale_factor),
                  keep=(tensors, inps, outs), finish=finish, group_size=len(tensors),
                  result=result)


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set):
    """Starts allreducing a list of tensors as one group (negotiated and fused
    together; tensor i is named '<base>_<i+1>of<n>'). Returns a handle whose
    synchronize() returns the list of new tensors."""
    op = handle_average_backwards_compatibility(op, average)
    if _tracing():
        return _traced.grouped_allreduce_async(tensors, False, name, op, prescale_factor,
                                               postscale_factor, process_set)
    return _grouped_allreduce_async(tensors, False, name, op, prescale_factor, postscale_factor,
                                    process_set)


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set):
    """In-place grouped_allreduce_async; synchronize() returns `tensors`."""
    op = handle_average_backwards_compatibility(op, average)
    if _tracing():
        return _traced.grouped_allreduce_async(tensors, True, name, op, prescale_factor,
                                               postscale_factor, process_set)
    return _grouped_allreduce_async(tensors, True, name, op, prescale_factor, postscale_factor,
                                    process_set)


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=global_process_set):
    """Blocking in-place grouped allreduce; returns `tensors`."""
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor,
                                                postscale_factor, process_set))


class HorovodGroupedAllreduce(torch.autograd.Function):
    """grouped_allreduce with gradients (grouped allreduce of the gradients)."""

    @staticmethod
    def forward(ctx, name, op, prescale_factor, postscale_factor, process_set, *tensors):
        ctx.op = op
        ctx.prescale_factor = prescale_factor
        ctx.postscale_factor = postscale_factor
        ctx.process_set = process_set
        return tuple(synchronize(_grouped_allreduce_async(tensors, False, name, op, prescale_factor,
                                                          postscale_factor, process_set)))

    @staticmethod
    def backward(ctx, *grad_outputs):
        grads = grouped_allreduce(list(grad_outputs), op=ctx.op, prescale_factor=ctx.prescale_factor,
                                  postscale_factor=ctx.postscale_factor, process_set=ctx.process_set)
        return (None, None, None, None, None, *grads)


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """Blocking grouped allreduce returning a list of new tensors. Differentiable."""
    op = handle_average_backwards_compatibility(op, average)
    if _tracing():
        return _traced.grouped_allreduce(tensors, name, compression, op, prescale_factor,
                                         postscale_factor, process_set)
    tensors = list(tensors)
    if not tensors:
        return []
    compressed, ctxs = zip(*[compression.compress(t) for t in tensors])
    reduced = HorovodGroupedAllreduce.apply(name, op, prescale_factor, postscale_factor,
                                            process_set, *compressed)
    return [compression.decompress(t, c) for t, c in zip(reduced, ctxs)]
