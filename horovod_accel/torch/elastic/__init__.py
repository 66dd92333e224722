"""`horovod.torch.elastic` (`hvd.elastic` after `import horovod.torch as hvd`):
elastic training for PyTorch.

- run(func): the decorator that runs `func(state, ...)` in the elastic retry
  loop (horovod_accel/common/elastic.py: sync, call, on failure restore /
  reset and call again); reset is the torch adapter's `shutdown(); init()`.
  Collectives must not run between the decorated call and its state sync,
  i.e. call `func` with the state, as upstream requires.
- TorchState, ObjectState (state.py), ElasticSampler (sampler.py), the
  handler registry (handlers.py).
"""
from horovod_accel.common.elastic import run_fn
from horovod_accel.torch.elastic.handlers import (ModelStateHandler, OptimizerStateHandler,
                                                  SamplerStateHandler, StateHandler,
                                                  get_handler_registry, set_handler_registry)
from horovod_accel.torch.elastic.sampler import ElasticSampler
from horovod_accel.torch.elastic.state import ObjectState, TorchState
from horovod_accel.torch.mpi_ops import init, shutdown


def run(func):
    """Decorator: runs `func(state, *args, **kwargs)` elastically. The state
    is synced from rank 0 before the first call and after every reset; a
    HorovodInternalError restores the last commit, a HostsUpdatedInterrupt
    keeps the current state; both reset (shutdown(); init()) and call again.
    Returns func's return value."""
    return run_fn(func, _reset)


def _reset():
    shutdown()
    init()


__all__ = ["ElasticSampler", "ModelStateHandler", "ObjectState", "OptimizerStateHandler",
           "SamplerStateHandler", "StateHandler", "TorchState", "get_handler_registry", "run",
           "set_handler_registry"]
