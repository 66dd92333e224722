"""TorchState and the torch-bound ObjectState (upstream
`horovod.torch.elastic.state`).

TorchState(model=None, optimizer=None, **kwargs): every keyword becomes an
attribute (`state.model`, `state.optimizer`, `state.epoch`, ...). Values of a
registered type (handlers.py: Module, Optimizer, ElasticSampler, or what the
user registers) are handled by their handler; the rest are plain objects
(common ObjectState: saved by reference, synced by broadcast from rank 0).
- save(): handlers save (deep copies of state_dict()), then the objects;
- restore(): back to the last save;
- sync(): collective: rank 0's parameters, buffers and optimizer state,
  the samplers' union of processed indices, rank 0's saved objects; then
  saves, so a restore() before the next commit returns to the synced state;
- commit(): collective: handlers share (samplers merge every rank's
  records), save(), then the common host-update check;
- reset(): handlers adapt to the new size (samplers reshard).
The handler classes and registry (handlers.py) are importable from here too,
as from upstream's module. Handlers are visited in attribute-name order, so every rank issues the same
collectives in the same order. Reassigning a handled attribute
(`state.model = other`) hands the new value to its handler, which saves it.
"""
from horovod_accel.common import elastic as _common
from horovod_accel.torch.elastic.handlers import (  # noqa: F401 -- upstream's module path
    ModelStateHandler, OptimizerStateHandler, SamplerStateHandler, StateHandler,
    get_handler_registry, handler_for, set_handler_registry)
from horovod_accel.torch.functions import allgather_object, broadcast_object
from horovod_accel.torch.mpi_ops import rank


class ObjectState(_common.ObjectState):
    """Plain Python attributes (`ObjectState(epoch=0, batch=0)`), synced
    with the torch adapter's object collectives. bcast_object / get_rank
    may still be given, as with upstream's common ObjectState."""

    def __init__(self, bcast_object=None, get_rank=None, **kwargs):
        super().__init__(bcast_object or broadcast_object, get_rank or rank,
                         allgather_object, **kwargs)


class TorchState(_common.ObjectState):
    """State of a PyTorch training job (module docstring).

    Args:
        model: optional torch.nn.Module.
        optimizer: optional torch.optim.Optimizer.
        kwargs: further attributes: more models/optimizers/samplers (by
            handler) or plain Python objects.
    """

    def __init__(self, model=None, optimizer=None, **kwargs):
        kwargs.update(model=model, optimizer=optimizer)
        handlers, plain = {}, {}
        for name, value in kwargs.items():
            handler = handler_for(value)
            if handler is None:
                plain[name] = value
            else:
                handlers[name] = handler
        object.__setattr__(self, "_handlers", dict(sorted(handlers.items())))
        for name, handler in self._handlers.items():
            object.__setattr__(self, name, handler.value)
        super().__init__(broadcast_object, rank, allgather_object, **plain)

    def __setattr__(self, name, value):
        handlers = self.__dict__.get("_handlers")
        if handlers is not None and name in handlers and name in self.__dict__:
            handlers[name].set_value(value)
        super().__setattr__(name, value)

    def save(self):
        for handler in self._handlers.values():
            handler.save()
        super().save()

    def restore(self):
        for handler in self._handlers.values():
            handler.restore()
        super().restore()

    def sync(self):
        for handler in self._handlers.values():
            handler.sync()
            handler.save()
        super().sync()

    def commit(self):
        for handler in self._handlers.values():
            handler.share()
        super().commit()

    def reset(self):
        for handler in self._handlers.values():
            handler.reset()


__all__ = ["ModelStateHandler", "ObjectState", "OptimizerStateHandler", "SamplerStateHandler",
           "StateHandler", "TorchState", "get_handler_registry", "set_handler_registry"]
