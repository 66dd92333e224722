"""The JAX primitive behind every Horovod collective inside a traced JAX
function (jax.jit, jax.grad, lax.scan, ...), and its lowering to the XLA
custom call `hvda_collective` (csrc/jax/collective_handler.cc).

NOTE [Ordered collectives]
XLA may run independent custom calls in any order, and two ranks that block
in different collectives would wait for each other forever. So every
collective carries one *ordered* JAX effect (`CollectiveEffect`): JAX threads
a token through all ordered operations of a program, in program order, and
across successive executions of compiled programs. Each rank therefore issues
its collectives in the order the traced function calls them; a data-parallel
program traced identically on every rank issues the same sequence everywhere.
A program that differs between ranks still cannot hang: the core matches
collectives by name and reports a mismatch, or a collective only some ranks
issue, with its named errors (docs/design/never_hang.md).

NOTE [Names inside a traced function]
The core matches a collective across ranks by name, so a traced collective's
name must be the same on every rank and the same in every execution:
- given name  -> "<op>.<name>", as in eager mode;
- no name     -> "<op>.jit.<module>.<k>": <module> is the lowered program's
  name (JAX derives it from the jitted function's name, e.g. jit_train_step)
  and k counts the collectives lowered into that module, in lowering order
  (the jaxpr's equation order, the same on every rank).
A name is released when its collective completes, and the ordering token
runs the collectives of one rank one at a time, so the next execution of the
same program (or the next iteration of a loop body) reuses the names safely.

This module uses JAX's internal effect and lowering API (jax._src), pinned to
the jax release this package supports; it is the only module that does.
"""
import itertools

import numpy as np
from jax._src import core as _jcore
from jax._src import effects as _effects
from jax._src import ffi as _ffi
from jax._src.interpreters import batching as _batching
from jax._src.interpreters import mlir as _mlir

from horovod_accel.common.shapes import scattered_rows

TARGET = "hvda_collective"

# hvda_core_op_type (csrc/include/horovod_accel/core_api.h)
ALLREDUCE, ALLGATHER, BROADCAST, ALLTOALL, REDUCESCATTER = 0, 1, 2, 5, 7
KIND_NAMES = {ALLREDUCE: "allreduce", ALLGATHER: "allgather", BROADCAST: "broadcast",
              ALLTOALL: "alltoall", REDUCESCATTER: "reducescatter"}


class CollectiveEffect(_effects.Effect):
    """The ordered effect of a Horovod collective (NOTE [Ordered collectives])."""
    __str__ = lambda self: "HorovodCollective"  # noqa: E731


COLLECTIVE_EFFECT = CollectiveEffect()
for _set in (_effects.lowerable_effects, _effects.ordered_effects,
             _effects.control_flow_allowed_effects, _effects.custom_derivatives_allowed_effects,
             _effects.remat_allowed_effects):
    _set.add_type(CollectiveEffect)

collective_p = _jcore.Primitive("horovod_collective")
collective_p.multiple_results = True


def bind(xs, *, kind, name, grouped, process_set_id, set_size, set_rank, reduce_op=1,
         prescale=1.0, postscale=1.0, root_rank=-1):
    """Binds the primitive on arrays or tracers xs (a list); returns a list.
    name: the user's name or None. grouped: the op is a grouped_* call (its
    automatic name says so). set_size/set_rank: the process set's topology,
    fixed at trace time (output shapes depend on them)."""
    return collective_p.bind(*xs, kind=kind, name=name, grouped=grouped,
                             process_set_id=process_set_id, set_size=set_size,
                             set_rank=set_rank, reduce_op=reduce_op, prescale=float(prescale),
                             postscale=float(postscale), root_rank=root_rank)


def is_top_level():
    """False while JAX traces a function (jit, grad, vmap, scan bodies, ...)."""
    return _jcore.trace_ctx.is_top_level()


def _out_shape(kind, shape, set_size, set_rank):
    if kind == ALLGATHER:
        return (shape[0] * set_size, *shape[1:])
    if kind == REDUCESCATTER:
        return (scattered_rows(shape[0], set_size, set_rank), *shape[1:])
    return tuple(shape)


@collective_p.def_effectful_abstract_eval
def _abstract_eval(*avals, kind, set_size, set_rank, **_):
    outs = [_jcore.ShapedArray(_out_shape(kind, a.shape, set_size, set_rank), a.dtype)
            for a in avals]
    return outs, {COLLECTIVE_EFFECT}


def _impl(*xs, **params):
    # Outside any trace the primitive runs as its own small compiled program
    # (the public ops take the eager path instead; this serves jax.grad &c.
    # without jit, whose primitives JAX applies one at a time).
    from jax._src import dispatch  # noqa: PLC0415
    return dispatch.apply_primitive(collective_p, *xs, **params)


collective_p.def_impl(_impl)

# A unique marker in each module context's lowering cache: the counter of
# collectives lowered into that module (NOTE [Names inside a traced function]).
_COUNTER_KEY = ("horovod_accel", "collective_counter")


def _module_name(module_context):
    try:
        return str(module_context.module.operation.attributes["sym_name"]).strip('"')
    except (KeyError, AttributeError):
        return "module"


def core_name(kind, name, grouped, module_context):
    op = ("grouped_" if grouped else "") + KIND_NAMES[kind]
    if name:
        return f"{op}.{name}"
    counter = module_context.lowering_cache.setdefault(_COUNTER_KEY, itertools.count())
    return f"{op}.jit.{_module_name(module_context)}.{next(counter)}"


def _lowering(ctx, *args, kind, name, grouped, process_set_id, set_size, set_rank, reduce_op,
              prescale, postscale, root_rank):
    platforms = tuple(ctx.module_context.platforms)
    if kind in (ALLGATHER, ALLTOALL) and platforms != ("cpu",):
        raise NotImplementedError(
            f"horovod {KIND_NAMES[kind]} inside jax.jit runs on CPU arrays only for now (this "
            f"program is compiled for {', '.join(platforms)}): the core returns its result in "
            f"memory it allocates, which it does not do on accelerators yet. Call it outside jit "
            f"(through host memory), or on CPU arrays.")
    token = ctx.tokens_in.get(COLLECTIVE_EFFECT)
    n = len(args)
    # In-place where the result has the input's shape: XLA gives the call one
    # buffer (copying first if the input is still needed elsewhere).
    in_place = kind in (ALLREDUCE, BROADCAST)
    aliases = {i + 1: i + 1 for i in range(n)} if in_place else None
    lowering_ctx = ctx.replace(avals_in=[_jcore.abstract_token, *ctx.avals_in],
                               avals_out=[_jcore.abstract_token, *ctx.avals_out])
    op = _ffi.build_ffi_lowering_function(
        TARGET, has_side_effect=True, operand_output_aliases=aliases,
    )(lowering_ctx, token, *args,
      kind=np.int64(kind), name=core_name(kind, name, grouped, ctx.module_context),
      process_set=np.int64(process_set_id), reduce_op=np.int64(reduce_op),
      prescale=np.float64(prescale), postscale=np.float64(postscale),
      root_rank=np.int64(root_rank))
    results = list(op.results)
    ctx.set_tokens_out(ctx.tokens_in.update_tokens(_mlir.TokenSet({COLLECTIVE_EFFECT:
                                                                   results[0]})))
    return results[1:]


# CUDA: the handler takes XLA's stream and hands it, with the device buffers,
# to the core's CUDA device plugin (csrc/jax/collective_handler.cc).
for _platform in ("cpu", "cuda"):
    _mlir.register_lowering(collective_p, _lowering, platform=_platform)


def _batch_rule(args, dims, *, kind, **params):
    """vmap: an allreduce or broadcast is elementwise over the whole array, so
    the batched array goes through as it is; the others mix rows across ranks
    and have no batched meaning."""
    if kind not in (ALLREDUCE, BROADCAST):
        raise NotImplementedError(
            f"horovod {KIND_NAMES[kind]} cannot run under jax.vmap: it exchanges rows of dim 0 "
            f"between ranks. Call it outside vmap, on the batched array.")
    outs = collective_p.bind(*args, kind=kind, **params)
    return outs, list(dims)


_batching.primitive_batchers[collective_p] = _batch_rule
