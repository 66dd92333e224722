"""Upstream's `horovod.tensorflow.util`: small TensorFlow helpers that
upstream's tests and user code import (`from horovod.tensorflow.util import
_executing_eagerly`).

- `_executing_eagerly()`: True in eager mode, False inside tf.function and
  TF1 graphs (also `hvd._executing_eagerly`).
- `_make_subgraph(f)`: `tf.function(f)`.
- `_cache(f)`: memoises f on (positional args, eager or not); args must be
  hashable (use `vars_to_refs` for variables).
- `vars_to_refs` / `refs_to_vars`: a (nested) list of variables as a hashable
  tuple of references, and back. Keras 3 variables (which have no `.ref()`)
  are referenced through the tf.Variable they wrap, so `refs_to_vars` returns
  that tf.Variable (same value, `assign` works on both).
"""
import tensorflow as tf
from tensorflow.python.eager import context


def _executing_eagerly():
    """Returns true if eager execution is supported and enabled."""
    return context.executing_eagerly()


def _make_subgraph(f):
    return tf.function(f)


def _cache(f):
    cache = {}

    def wrapper(*args):
        key = (args, _executing_eagerly())
        if key in cache:
            return cache[key]
        retval = f(*args)
        cache[key] = retval
        return retval

    return wrapper


def _as_tf_variable(v):
    """The object whose `.ref()` identifies v: v itself, or the tf.Variable a
    Keras 3 variable wraps (its `.value`)."""
    if hasattr(v, "ref"):
        return v
    inner = getattr(v, "value", None)
    if hasattr(inner, "ref") and isinstance(inner, tf.Variable):
        return inner
    raise TypeError(f"vars_to_refs takes tf.Variables or Keras variables, got {type(v).__name__}")


def vars_to_refs(vars):  # noqa: A002 -- upstream's signature
    if isinstance(vars, list):
        return tuple(vars_to_refs(v) for v in vars)
    return _as_tf_variable(vars).ref()


def refs_to_vars(refs):
    if isinstance(refs, tuple):
        return [refs_to_vars(r) for r in refs]
    return refs.deref()


__all__ = ["_executing_eagerly", "_make_subgraph", "_cache", "vars_to_refs", "refs_to_vars"]
