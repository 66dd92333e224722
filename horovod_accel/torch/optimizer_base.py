"""What the two torch DistributedOptimizer mixins share: the gradient-reducing
one (optimizer.py) and the delta-based Adasum one (optimizer_adasum.py).

The marker base class, wrapping a torch optimizer instance in a dynamic
subclass, parameter naming with upstream's validation and messages, the
gradient-ready hooks, and the error messages both raise. Neither optimizer
module imports the other; optimizer.py's DistributedOptimizer picks one.
"""
import weakref

import torch

from horovod_accel.common import optimizer_args as _args
from horovod_accel.torch.functions import canonical_name, duplicate_names
from horovod_accel.torch.traced import tracing as _tracing

# torch >= 2.1 has a hook that fires after the gradient is accumulated into
# p.grad; older versions hook the AccumulateGrad node (upstream's way).
_HAS_POST_ACCUMULATE_HOOK = hasattr(torch.Tensor, "register_post_accumulate_grad_hook")

ERR_TOO_MANY_PASSES = (
    "Gradients were computed more than backward_passes_per_step times before call to step(). "
    "Increase backward_passes_per_step to accumulate gradients locally.")
ERR_ZERO_GRAD_IN_FLIGHT = (
    "optimizer.zero_grad() was called after loss.backward() but before optimizer.step() or "
    "optimizer.synchronize(). This is prohibited as it can cause a race condition.")

check_passes = _args.check_backward_passes


class WrappedOptimizer:
    """Marker base of the mixins DistributedOptimizer puts in front of a
    torch optimizer's class (optimizer.py's and optimizer_adasum.py's)."""


def wrap(optimizer, mixin):
    """An instance of a dynamic subclass (mixin, type(optimizer)) -- so
    isinstance(result, type(optimizer)) holds -- sharing optimizer's
    param_groups, defaults, state and hooks (upstream re-ran __init__, which
    lost `defaults` and any loaded state). An instance-level `step` (an LR
    scheduler wraps the bound method of the optimizer it was given) would
    bypass the mixin's step, so it is not copied. The caller runs _hvd_setup."""
    cls = type(optimizer.__class__.__name__, (mixin, optimizer.__class__), {})
    wrapped = cls.__new__(cls)
    wrapped.__dict__.update({k: v for k, v in optimizer.__dict__.items() if k != "step"})
    return wrapped


def parameter_names(param_groups, named_parameters):
    """dict parameter -> unique name; upstream's validation and messages.
    Names lose the `_orig_mod.` component of a torch.compile'd model
    (functions.canonical_name), so compiled and uncompiled replicas submit
    their gradients under the same names."""
    if named_parameters is None:
        return {p: f"allreduce.noname.{i}.{j}"
                for i, group in enumerate(param_groups) for j, p in enumerate(group["params"])}
    named_parameters = list(named_parameters)
    if any(not isinstance(p, tuple) for p in named_parameters):
        raise ValueError("named_parameters should be a sequence of tuples (name, parameter), "
                         "usually produced by model.named_parameters().")
    originals = [name for name, _ in named_parameters]
    named_parameters = [(canonical_name(name), p) for name, p in named_parameters]
    dups = duplicate_names(originals, [name for name, _ in named_parameters])
    if dups:
        raise ValueError(f"Parameter names in named_parameters must be unique. "
                         f"Found duplicates: {dups}")
    names = {p: name for name, p in named_parameters}
    unnamed = [p for group in param_groups for p in group["params"] if p not in names]
    if unnamed:
        raise ValueError("named_parameters was specified, but one or more model parameters were "
                         "not named. Python object ids: %s" % ", ".join(str(id(p)) for p in unnamed))
    return names


def _grad_ready(ref, p):
    opt = ref()
    if opt is not None:
        opt._hvd_grad_ready(p)


def register_hooks(optimizer, params):
    """Hooks every parameter's gradient accumulation. The hooks hold the
    optimizer weakly and are removed when it is garbage collected, so a
    discarded DistributedOptimizer stops reducing.

    Under compiled autograd (torch._dynamo.config.compiled_autograd) Dynamo
    traces the hooks into its backward graph. Traced, the hook's body could
    read p.grad before the graph had materialized it (seen on torch 2.13:
    None for some parameters from the second step on, so DistributedOptimizer
    reduced zeros in their place) and would graph-break at every core call
    anyway, so it runs outside Dynamo, as a torch.compiler.disable'd call: one
    graph break per hook, gradients reduced as in eager. Without compiled
    autograd the engine calls the hooks outside Dynamo (after each compiled
    graph's backward) and the body is called directly."""
    ref = weakref.ref(optimizer)

    def on_grad_ready(p):
        if _tracing():
            torch.compiler.disable(_grad_ready)(ref, p)
        else:
            _grad_ready(ref, p)

    keep = []
    for p in params:
        if _HAS_POST_ACCUMULATE_HOOK:
            keep.append(p.register_post_accumulate_grad_hook(on_grad_ready))
        else:
            accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
            keep.append(accumulator.register_hook(lambda *_, p=p: on_grad_ready(p)))
            keep.append(accumulator)     # the node must outlive the hook
    weakref.finalize(optimizer, _remove_hooks, keep)


def _remove_hooks(keep):
    for item in keep:
        if hasattr(item, "remove"):
            item.remove()
