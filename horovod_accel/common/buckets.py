"""Gradient buckets: which gradients a DistributedOptimizer (or gradient
tape) reduces together, for every framework adapter.

A bucket is the unit of communication: its gradients go to the core as one
op -- a plain allreduce for a single dense gradient, a grouped allreduce for
several (the core negotiates and fuses a group atomically). Buckets therefore
set how many ops the core sees per step and, where the adapter can start
early (torch's gradient hooks), how soon communication begins.

Plans are identical on every rank for identical models, because they depend
only on parameter order, sizes and dtypes -- never on timing:
- `groups=None`: automatic buckets. Parameters are walked in reverse
  registration order (roughly the order backward produces gradients) and
  packed into consecutive buckets of one dtype/device holding at most
  `bucket_bytes` (a parameter bigger than that gets a bucket of its own).
- `groups=<int n>`: upstream's `split_list` of the parameters into n buckets.
- `groups=<list of lists of parameters>`: one bucket per listed group
  (members that are not among the parameters are ignored); every other
  parameter is a bucket of its own.

Parameters are compared by identity (`id`), so unhashable ones (tf.Variable)
work. The adapter describes a parameter through `describe(p) -> (nbytes,
key)`: its gradient's size in bytes and a hashable key (dtype, device) that
must match for two parameters to share an automatic bucket.
"""
import warnings

from horovod_accel.common.util import split_list

# Default cap for automatic buckets. Small enough that the first buckets of a
# step are on the wire while backward still runs, large enough that a model
# with hundreds of small tensors costs a handful of ops. Module-level so a user
# (or a benchmark) can tune it before constructing the optimizer.
DEFAULT_BUCKET_BYTES = 4 << 20


class Bucket:
    """Parameters reduced together, plus the bookkeeping of one step.

    `name` is the core tensor name stem (the first parameter's name), so the
    same bucket has the same name on every rank. `remaining` counts parameters
    whose gradient is not ready yet this step and `work` holds what was
    submitted (None until then); adapters that reduce all gradients at once
    (TensorFlow) leave both alone.
    """

    __slots__ = ("name", "params", "remaining", "work")

    def __init__(self, name, params):
        self.name = name
        self.params = tuple(params)
        self.remaining = len(self.params)
        self.work = None

    def reset(self):
        self.remaining = len(self.params)
        self.work = None

    def __repr__(self):
        return f"Bucket({self.name!r}, {len(self.params)} params)"


def resolve_groups(num_groups, groups):
    """Upstream's deprecated `num_groups` folded into `groups` (with its
    DeprecationWarning); returns the effective `groups`."""
    if num_groups != 0:
        warnings.warn("Parameter `num_groups` has been replaced by `groups` "
                      "and will be removed in v0.23.0.", DeprecationWarning, stacklevel=3)
        if groups is None:
            groups = num_groups
    return groups


def validate_groups(groups, is_param, param_type):
    """Raises ValueError (upstream's messages) unless `groups` is None, a
    positive int, or a list of lists of distinct parameters.

    is_param(x) -> bool tells a parameter of this framework; param_type names
    it in messages ('torch.Tensor', 'tf.Variable')."""
    if groups is None:
        return
    if not (isinstance(groups, list) or (isinstance(groups, int) and groups > 0)):
        raise ValueError(f"groups should be a non-negative integer or "
                         f"a list of list of {param_type}.")
    if isinstance(groups, list):
        seen = set()
        for group in groups:
            for p in group:
                if not is_param(p):
                    raise ValueError(f"groups must consist of {param_type}.")
                if id(p) in seen:
                    raise ValueError("A parameter can only appear once in groups.")
                seen.add(id(p))


def plan_buckets(params, names, groups, bucket_bytes, describe):
    """Returns the list of Buckets covering `params` exactly once.

    params: the parameters to reduce, in the optimizer's order.
    names: a list of unique names, parallel to params.
    groups: see the module docstring (already validated).
    bucket_bytes: cap for automatic buckets. describe: see the module docstring.
    """
    name_of = {id(p): name for p, name in zip(params, names)}
    if groups is None:
        parts = _auto_parts(params, bucket_bytes, describe)
    elif isinstance(groups, int):
        parts = [part for part in split_list(list(params), groups) if part]
    else:
        member = {id(p) for p in params}
        parts, grouped = [], set()
        for group in groups:
            part = [p for p in group if id(p) in member]
            if part:
                parts.append(part)
                grouped.update(id(p) for p in part)
        parts.extend([p] for p in params if id(p) not in grouped)
    return [Bucket(name_of[id(part[0])], part) for part in parts]


def _auto_parts(params, bucket_bytes, describe):
    parts, current, current_bytes, current_key = [], [], 0, None
    for p in reversed(params):
        nbytes, key = describe(p)
        if current and (key != current_key or current_bytes + nbytes > bucket_bytes):
            parts.append(current)
            current, current_bytes = [], 0
        current.append(p)
        current_bytes += nbytes
        current_key = key
    if current:
        parts.append(current)
    return parts
