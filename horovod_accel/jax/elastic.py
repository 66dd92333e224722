"""`horovod.jax.elastic` (`hvd.elastic` after `import horovod.jax as hvd`):
elastic training for JAX, over horovod_accel/common/elastic.py.

- run(func): the elastic retry loop (common run_fn) with reset =
  `shutdown(); init()`. A collective that fails inside jax.jit surfaces as
  `jax.errors.JaxRuntimeError` whose message carries `horovod_accel:` and the
  core's message (a lost peer, a shutdown, a mismatch): run() raises it as
  HorovodInternalError, so the loop restores the last commit, resets and
  calls `func` again. Any other JaxRuntimeError is the program's own and
  propagates unchanged. A new job clears JAX's trace caches (xla_ops.py's
  reset listener), so jitted functions are traced again for the new size.
- JaxState(params=None, opt_state=None, **kwargs): every keyword becomes an
  attribute (state.params, state.opt_state, state.epoch, ...):
  - commit(): waits until the attributes' arrays are computed (jax
    dispatches asynchronously: a commit must never keep a value whose
    computation can still fail), keeps a copy, then checks for host updates
    (collective). JAX arrays are immutable, so the copy keeps references;
    numpy arrays and other Python values are deep-copied;
  - restore(): the attributes back to the last commit;
  - sync(): collective: every attribute takes rank 0's current value -- a
    pytree of arrays (params, optimizer state) by broadcast_parameters, any
    other value by broadcast_object -- and the result becomes the commit
    (numpy leaves stay numpy arrays).
  A committed array must stay alive: do not donate state arrays to a jitted
  function (donate_argnums), or restore() cannot return to them (it says so).
- ObjectState(**kwargs): plain attributes, synced with the object collectives.
"""
import copy
import functools

import jax
import numpy as np

from horovod_accel.common import elastic as _common
from horovod_accel.common.exceptions import HorovodInternalError

# The marker of a Horovod collective's failure in an XLA error (csrc/jax/).
_FAILURE_MARKER = "horovod_accel:"


def _ops():
    # Imported on first use: the package imports this module.
    from horovod_accel.jax import mpi_ops  # noqa: PLC0415
    return mpi_ops


def _functions():
    from horovod_accel.jax import functions  # noqa: PLC0415
    return functions


def is_horovod_failure(error):
    """True if `error` is a Horovod collective's failure reported by XLA (a
    JaxRuntimeError naming horovod_accel), which elastic training recovers from."""
    return isinstance(error, jax.errors.JaxRuntimeError) and _FAILURE_MARKER in str(error)


def _translating(fn):
    """fn, with Horovod's failures inside XLA programs raised as HorovodInternalError."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except jax.errors.JaxRuntimeError as e:
            if is_horovod_failure(e):
                raise HorovodInternalError(str(e)) from e
            raise

    return wrapper


def run(func):
    """Decorator: runs `func(state, *args, **kwargs)` elastically (module
    docstring). The state is synced from rank 0 before the first call and
    after every reset; a failed collective restores the last commit, a
    HostsUpdatedInterrupt keeps the current state; both reset and call
    `func` again. Returns func's return value."""
    return _common.run_fn(_translating(func), _reset)


def _reset():
    _ops().shutdown()
    _ops().init()


def _rank():
    return _ops().rank()


@_translating
def _bcast_object(obj, root_rank=0):
    return _functions().broadcast_object(obj, root_rank=root_rank)


@_translating
def _allgather_object(obj):
    return _functions().allgather_object(obj)


@_translating
def _broadcast_tree(tree, root_rank=0):
    return _functions().broadcast_parameters(tree, root_rank=root_rank)


def _is_array(leaf):
    return isinstance(leaf, (jax.Array, np.ndarray))


def _is_array_tree(value):
    """A pytree with at least one leaf, every leaf an array."""
    leaves = jax.tree_util.tree_leaves(value)
    return bool(leaves) and all(_is_array(leaf) for leaf in leaves)


def _copy_value(name, value):
    """A copy of one attribute's value that later changes to the attribute
    cannot alter: jax arrays by reference, everything else deep-copied."""
    def leaf_copy(leaf):
        if isinstance(leaf, jax.Array):
            return leaf
        return copy.deepcopy(leaf)

    try:
        return jax.tree_util.tree_map(leaf_copy, value)
    except (TypeError, copy.Error, RecursionError) as e:
        raise TypeError(f"JaxState cannot keep a copy of attribute {name!r} "
                        f"({type(value).__name__}): {e}. Keep only copyable values in the "
                        f"state (arrays, numbers, containers of them).") from e


def _check_alive(name, value):
    for leaf in jax.tree_util.tree_leaves(value):
        if isinstance(leaf, jax.Array) and leaf.is_deleted():
            raise RuntimeError(
                f"JaxState.restore(): an array of the committed {name!r} has been deleted, most "
                f"likely donated to a jitted function (donate_argnums). The state keeps "
                f"references to the committed arrays: do not donate the state's arrays.")


class ObjectState(_common.ObjectState):
    """Plain Python attributes (`ObjectState(epoch=0, batch=0)`), synced
    with horovod.jax's object collectives. bcast_object / get_rank may still
    be given, as with upstream's common ObjectState."""

    def __init__(self, bcast_object=None, get_rank=None, **kwargs):
        super().__init__(bcast_object or _bcast_object, get_rank or _rank, _allgather_object,
                         **kwargs)


class JaxState(_common.ObjectState):
    """State of a JAX training job (module docstring).

    Args:
        params: optional pytree of arrays (the model's parameters).
        opt_state: optional optimizer state (e.g. an optax state).
        kwargs: further attributes: pytrees of arrays or plain Python values.
    """

    def __init__(self, params=None, opt_state=None, **kwargs):
        kwargs = dict(params=params, opt_state=opt_state, **kwargs)
        super().__init__(_bcast_object, _rank, _allgather_object, **kwargs)
        self.save()

    def _names(self):
        return sorted(self._saved_state)

    def save(self):
        self._saved_state = {name: _copy_value(name, getattr(self, name))
                             for name in self._names()}

    def restore(self):
        for name in self._names():
            _check_alive(name, self._saved_state[name])
        for name in self._names():
            setattr(self, name, _copy_value(name, self._saved_state[name]))

    @_translating
    def commit(self):
        jax.block_until_ready([getattr(self, name) for name in self._names()])
        super().commit()

    @_translating
    def sync(self):
        names = self._names()
        mine = {name: _is_array_tree(getattr(self, name)) for name in names}
        plain = {name: getattr(self, name) for name in names if not mine[name]}
        kinds, plain = self._bcast_object((mine, plain))
        for name in names:
            if not kinds[name]:
                continue
            if not mine[name]:
                raise ValueError(
                    f"JaxState.sync(): rank 0's {name!r} is a pytree of arrays but this rank's "
                    f"is {type(getattr(self, name)).__name__}: every rank must create the state "
                    f"with the same kinds of values (e.g. initialise params on every rank, then "
                    f"let sync() replace them with rank 0's).")
            setattr(self, name, _broadcast_tree(getattr(self, name), root_rank=0))
        for name, value in plain.items():
            setattr(self, name, value)
        self.save()


__all__ = ["JaxState", "ObjectState", "is_horovod_failure", "run"]
