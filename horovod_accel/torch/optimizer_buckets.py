"""Which gradients DistributedOptimizer reduces together (its "buckets").

A bucket is the unit of communication: once every parameter in it has its
gradient ready (after `backward_passes_per_step` backward passes), the bucket
is submitted as one op -- `allreduce_async_` for a single dense gradient,
`grouped_allreduce_async_` for several (the core negotiates and fuses a group
atomically). Buckets therefore set how many ops the core sees per step and how
early communication can start during backward.

Plans (identical on every rank for identical models, because they depend only
on parameter order, shapes and dtypes -- never on timing):
- `groups=None`: automatic buckets. Parameters are walked in reverse
  registration order (roughly the order backward produces gradients) and packed
  into consecutive buckets of one dtype and device holding at most
  `bucket_bytes` (a parameter bigger than that gets a bucket of its own and is
  reduced in place, without a copy into the fusion buffer).
- `groups=<int n>`: upstream's `split_list` of the parameters into n buckets.
- `groups=<list of lists of tensors>`: one bucket per listed group (parameters
  of the optimizer only); every other parameter is a bucket of its own.
"""
import torch

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
    whose gradient is not ready yet this step; `work` holds what was submitted
    (None until then).
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


def validate_groups(groups):
    """Raises ValueError (upstream's messages) unless `groups` is None, a
    positive int, or a list of lists of distinct tensors."""
    if groups is None:
        return
    if not (isinstance(groups, list) or (isinstance(groups, int) and groups > 0)):
        raise ValueError('groups should be a non-negative integer or '
                         'a list of list of torch.Tensor.')
    if isinstance(groups, list):
        seen = set()
        for group in groups:
            for p in group:
                if not isinstance(p, torch.Tensor):
                    raise ValueError('groups must consist of torch.Tensor.')
                if id(p) in seen:
                    raise ValueError('A parameter can only appear once in groups.')
                seen.add(id(p))


def plan_buckets(params, names, groups, bucket_bytes):
    """Returns the list of Buckets covering `params` exactly once.

    params: the optimizer's parameters that require grad, in param_groups order.
    names: dict parameter -> unique name. groups: see the module docstring
    (already validated). bucket_bytes: cap for automatic buckets.
    """
    if groups is None:
        parts = _auto_parts(params, bucket_bytes)
    elif isinstance(groups, int):
        parts = [part for part in split_list(params, groups) if part]
    else:
        member = {id(p) for p in params}
        parts, grouped = [], set()
        for group in groups:
            part = [p for p in group if id(p) in member]
            if part:
                parts.append(part)
                grouped.update(id(p) for p in part)
        parts.extend([p] for p in params if id(p) not in grouped)
    return [Bucket(names[part[0]], part) for part in parts]


def _auto_parts(params, bucket_bytes):
    parts, current, current_bytes, current_key = [], [], 0, None
    for p in reversed(params):
        nbytes = p.numel() * p.element_size()
        key = (p.dtype, p.device)
        if current and (key != current_key or current_bytes + nbytes > bucket_bytes):
            parts.append(current)
            current, current_bytes = [], 0
        current.append(p)
        current_bytes += nbytes
        current_key = key
    if current:
        parts.append(current)
    return parts
