"""The eager path of horovod.jax's collectives: concrete arrays, outside
jax.jit.

Every function here takes arguments the public op (mpi_ops.py) has already
checked (concrete JAX arrays of supported dtypes, the id of a registered
process set this rank belongs to, a valid op), hands host views of the
arrays to the core through the shared op layer (common/handles.py: names,
the handle table, error translation), blocks until the collective is done
and returns new jax.Arrays of the inputs' dtypes (arrays.py: how arrays
cross). Inputs are never modified.

Errors: a request the core refuses at enqueue raises ValueError (or
NotImplementedError for what this build does not offer, e.g. Adasum on a
process set) and submits nothing; a failed collective (cross-rank
mismatch, lost peer, shutdown) raises HorovodInternalError with the core's
message, which names the tensor.

Names: "<op>.<name>", or "<op>.noname.<n>" from the counters every adapter
shares; tensor i of a group of n is "<base>_<i+1>of<n>".
"""
from horovod_accel.common.default_runtime import DEFAULT_RUNTIME
from horovod_accel.common.exceptions import HorovodInternalError
from horovod_accel.common.handles import HANDLES, submit, submit_internal, synchronize
from horovod_accel.common.shapes import scattered_rows
from horovod_accel.jax import arrays as _a

_CPU = -1  # the core's device id for host memory


def _inputs(xs):
    """(host views, addresses, dtype codes, shapes) of concrete arrays."""
    hosts = [_a.to_host(x) for x in xs]
    codes = [_a.DTYPE_CODES[h.dtype] for h in hosts]
    return hosts, [_a.address(h) for h in hosts], codes, [list(h.shape) for h in hosts]


def _results(outs, xs):
    return [_a.from_host(o, x) for o, x in zip(outs, xs)]


# ---------------------------------------------------------------- allreduce


def allreduce(xs, grouped, name, op, prescale, postscale, ps_id):
    """Reduces each array of `xs` over the set; a list of new arrays. One
    array, or (grouped) the arrays as one group negotiated and fused
    together."""
    rt = DEFAULT_RUNTIME.initialized_runtime()
    hosts, ptrs, codes, shapes = _inputs(xs)
    outs = [_a.empty_host(h.shape, h.dtype) for h in hosts]
    optrs = [_a.address(o) for o in outs]
    if grouped:
        enqueue = lambda names: rt.enqueue_grouped_allreduce(  # noqa: E731
            names, ps_id, ptrs, optrs, codes, shapes, _CPU, op, prescale, postscale)
    else:
        enqueue = lambda core_name: rt.enqueue_allreduce(  # noqa: E731
            core_name, ps_id, ptrs[0], optrs[0], codes[0], shapes[0], _CPU, op, prescale,
            postscale)
    synchronize(submit("grouped_allreduce" if grouped else "allreduce", name, ps_id, enqueue,
                       keep=(xs, hosts, outs), finish=lambda works: None,
                       group_size=len(xs) if grouped else None))
    return _results(outs, xs)


# ---------------------------------------------------------------- allgather


def allgather(xs, grouped, name, ps_id):
    """Concatenates each array of every set rank along dim 0 (dim 0 may
    differ per rank); a list of new arrays."""
    rt = DEFAULT_RUNTIME.initialized_runtime()
    hosts, ptrs, codes, shapes = _inputs(xs)
    if grouped:
        enqueue = lambda names: rt.enqueue_grouped_allgather(  # noqa: E731
            names, ps_id, ptrs, codes, shapes, _CPU)
    else:
        enqueue = lambda core_name: rt.enqueue_allgather(  # noqa: E731
            core_name, ps_id, ptrs[0], codes[0], shapes[0], _CPU)

    def finish(works):
        return [_a.from_core_output(w.output(), h.dtype, x)
                for w, h, x in zip(works, hosts, xs)]

    return synchronize(submit("grouped_allgather" if grouped else "allgather", name, ps_id,
                              enqueue, keep=(xs, hosts), finish=finish,
                              group_size=len(xs) if grouped else None))


# ---------------------------------------------------------------- broadcast


def start_broadcast(x, root_rank, name, ps_id):
    """Submits a broadcast of `x` from global rank `root_rank` without
    waiting; returns the handle (finish_all() turns handles into results).
    Lets broadcast_parameters have every leaf in flight at once. `x` may
    also be a numpy array: its result is then a numpy array."""
    rt = DEFAULT_RUNTIME.initialized_runtime()
    (host,), (ptr,), (code,), (shape,) = _inputs([x])
    out = _a.empty_host(host.shape, host.dtype)
    return submit("broadcast", name, ps_id,
                  lambda core_name: rt.enqueue_broadcast(core_name, ps_id, ptr, _a.address(out),
                                                         code, shape, _CPU, root_rank),
                  keep=(x, host, out), finish=lambda works: _a.from_host(out, x))


def finish_all(handles):
    """Waits for every handle and returns their results in order. If some
    fail, still waits for the rest (their buffers must outlive the core's
    use of them and their names must be released), then raises the first
    failure."""
    results, error = [], None
    for h in handles:
        try:
            results.append(synchronize(h))
        except HorovodInternalError as e:
            error = error or e
            results.append(None)
    if error is not None:
        raise error
    return results


def broadcast(x, root_rank, name, ps_id):
    """A new array holding `x` of global rank `root_rank`."""
    return synchronize(start_broadcast(x, root_rank, name, ps_id))


# ---------------------------------------------------------------- alltoall


def alltoall(x, splits, name, ps_id):
    """Sends rows [sum(splits[:i]), sum(splits[:i+1])) of dim 0 to set rank i
    ([] splits: an equal split) and concatenates the blocks received in
    set-rank order. Returns (output array, rows received from each rank as
    a list of ints)."""
    rt = DEFAULT_RUNTIME.initialized_runtime()
    (host,), (ptr,), (code,), (shape,) = _inputs([x])

    def finish(works):
        out = _a.from_core_output(works[0].output(), host.dtype, x)
        return out, [int(s) for s in works[0].received_splits()]

    return synchronize(submit(
        "alltoall", name, ps_id,
        lambda core_name: rt.enqueue_alltoall(core_name, ps_id, ptr, code, shape, _CPU,
                                              list(splits)),
        keep=(x, host), finish=finish))


# ---------------------------------------------------------------- reducescatter


def reducescatter(xs, grouped, name, op, prescale, postscale, ps_id):
    """Reduces each array (same shape on every rank) over the set and returns
    this rank's share of its rows (common/shapes.py scattered_rows); a list
    of new arrays."""
    rt = DEFAULT_RUNTIME.initialized_runtime()
    n, set_rank = rt.process_set_size(ps_id), rt.process_set_rank(ps_id)
    hosts, ptrs, codes, shapes = _inputs(xs)
    outs = [_a.empty_host((scattered_rows(h.shape[0], n, set_rank),) + h.shape[1:], h.dtype)
            for h in hosts]
    optrs = [_a.address(o) for o in outs]
    if grouped:
        enqueue = lambda names: rt.enqueue_grouped_reducescatter(  # noqa: E731
            names, ps_id, ptrs, optrs, codes, shapes, _CPU, op, prescale, postscale)
    else:
        enqueue = lambda core_name: rt.enqueue_reducescatter(  # noqa: E731
            core_name, ps_id, ptrs[0], optrs[0], codes[0], shapes[0], _CPU, op, prescale,
            postscale)
    synchronize(submit("grouped_reducescatter" if grouped else "reducescatter", name, ps_id,
                       enqueue, keep=(xs, hosts, outs), finish=lambda works: None,
                       group_size=len(xs) if grouped else None))
    return _results(outs, xs)


# ---------------------------------------------------------------- join / barrier


def join():
    """Marks this rank as done with its data and blocks until every rank has
    joined; meanwhile the other ranks' allreduces proceed with this rank
    contributing zeros. Returns the global rank that joined last."""
    rt = DEFAULT_RUNTIME.initialized_runtime()
    last = synchronize(submit_internal("join", lambda: rt.enqueue_join(_CPU), keep=(),
                                       finish=lambda works: int(works[0].join_result())))
    # Every rank gets here once all have joined: unnamed numbering realigns
    # (the ranks that joined early skipped the others' ops).
    HANDLES.realign()
    return last


def barrier(ps_id):
    """Blocks until every rank of the set has reached the barrier."""
    rt = DEFAULT_RUNTIME.initialized_runtime()
    synchronize(submit_internal("barrier", lambda: rt.enqueue_barrier(ps_id), keep=(),
                                finish=lambda works: None))
