"""State handlers of TorchState (upstream `horovod.torch.elastic.state`'s
StateHandler classes and handler registry).

A handler owns one attribute of a TorchState whose type needs more than the
plain-object treatment (a model, an optimizer, an ElasticSampler):
- save(): keep a private copy of the value's state (local, no collective);
- restore(): put the saved copy back (local);
- sync(): make the value equal on every rank (collective: rank 0's, or for
  the sampler the union of all ranks' processed indices);
- share(): collective, run by every rank at each `state.commit()` before
  save() (the sampler merges the indices every rank recorded; default no-op);
- reset(): after an elastic reset, adapt to the new size (the sampler
  reshards; default no-op);
- set_value(value): the attribute was reassigned; track and save the new value.

The registry is an ordered list of (type, handler class); a TorchState
attribute gets the handler of the first type its value is an instance of.
`get_handler_registry()` returns that list itself (append to it to add a
type); `set_handler_registry(registry)` replaces its contents. It applies to
TorchStates created afterwards.
"""
import copy

import torch

from horovod_accel.torch.elastic.sampler import ElasticSampler
from horovod_accel.torch.functions import (allgather_object, broadcast_optimizer_state,
                                           broadcast_parameters)


class StateHandler:
    """Base handler: subclasses implement save, restore and sync."""

    def __init__(self, value):
        self.value = value

    def save(self):
        raise NotImplementedError(f"{type(self).__name__} must implement save()")

    def restore(self):
        raise NotImplementedError(f"{type(self).__name__} must implement restore()")

    def sync(self):
        raise NotImplementedError(f"{type(self).__name__} must implement sync()")

    def share(self):
        """Collective, at every commit before save(); nothing by default."""

    def reset(self):
        """After an elastic reset (new size); nothing by default."""

    def set_value(self, value):
        self.value = value
        self.save()


class _StateDictHandler(StateHandler):
    """save/restore through a deep copy of the value's state_dict()."""

    def __init__(self, value):
        super().__init__(value)
        self._saved = copy.deepcopy(value.state_dict())

    def save(self):
        self._saved = copy.deepcopy(self.value.state_dict())

    def restore(self):
        self.value.load_state_dict(copy.deepcopy(self._saved))


class ModelStateHandler(_StateDictHandler):
    """A torch.nn.Module: parameters and buffers (state_dict)."""

    def sync(self):
        broadcast_parameters(self.value.state_dict(), root_rank=0)


class OptimizerStateHandler(_StateDictHandler):
    """A torch.optim.Optimizer: state and param_groups (state_dict)."""

    def sync(self):
        broadcast_optimizer_state(self.value, root_rank=0)


class SamplerStateHandler(_StateDictHandler):
    """An ElasticSampler: epoch and processed indices (sampler.py)."""

    def sync(self):
        payloads = allgather_object(self.value._sync_payload(), name="elastic.sampler.sync")
        self.value.load_state_dict(ElasticSampler._synced_state(payloads))

    def share(self):
        payloads = allgather_object(self.value._commit_payload(), name="elastic.sampler.commit")
        self.value._merge_commit(payloads)

    def reset(self):
        self.value.reset()


_REGISTRY = [
    (torch.nn.Module, ModelStateHandler),
    (torch.optim.Optimizer, OptimizerStateHandler),
    (ElasticSampler, SamplerStateHandler),
]


def get_handler_registry():
    """The (type, handler class) list TorchState consults (the list itself)."""
    return _REGISTRY


def set_handler_registry(registry):
    """Replaces the registry's entries with `registry`'s (type, handler class) pairs."""
    entries = [tuple(entry) for entry in registry]
    for entry in entries:
        if len(entry) != 2 or not callable(entry[1]):
            raise ValueError(f"set_handler_registry takes (type, handler class) pairs, "
                             f"got {entry!r}.")
    _REGISTRY[:] = entries


def handler_for(value):
    """A new handler for `value`, or None for a plain object."""
    for handled_type, handler_cls in _REGISTRY:
        if isinstance(value, handled_type):
            return handler_cls(value)
    return None
