"""DistributedOptimizer(op=hvd.Adasum) with more than one rank: upstream's
`_DistributedAdasumOptimizer` (delta-based).

Adasum combines *model updates*, not gradients, so that the wrapped
optimizer's own logic (momentum, Adam moments, ...) runs locally on every rank
and only its effect is combined:

  for each parameter p, once its gradient is ready (after
  `backward_passes_per_step` backward passes, from a hook on p):
      start = p                           (kept in a persistent buffer)
      run the wrapped optimizer's step on p alone   -> p = start - f(g)
      delta = p - start; p = start        (p stays unchanged until step())
      submit allreduce_async_(delta, op=Adasum) under p's name
  step():
      submit the deltas of parameters whose hook did not fire (no gradient on
      this rank, or fewer passes than backward_passes_per_step); a parameter
      without a gradient gets no local update and contributes a zero delta;
      wait for every delta; start += adasum(delta); p = start.

Differences from upstream (docs/compat.md): upstream leaves the delta in p
between the hook and step(); here p keeps its value (the delta has its own
buffer), so code running between backward and step() sees the parameters.
`zero_grad(set_to_none=...)` is accepted and restarts a partial accumulation.

Global process set only (NotImplementedError otherwise, checked by
DistributedOptimizer). Like upstream, `synchronize()` is a no-op and
`skip_synchronize()` raises AssertionError. Threading: hooks run on the
thread running backward; only `step()` blocks.
"""
from contextlib import contextmanager

import torch

from horovod_accel.torch.mpi_ops import Adasum, allreduce_async_, global_process_set, synchronize
from horovod_accel.torch.optimizer_base import (ERR_TOO_MANY_PASSES, ERR_ZERO_GRAD_IN_FLIGHT,
                                                WrappedOptimizer, check_passes, parameter_names,
                                                register_hooks)

_ERR_SKIP_SYNCHRONIZE = "Skipping synchronization is not supported when using Adasum optimizer."


class _DistributedAdasumOptimizer(WrappedOptimizer):
    """Mixin placed in front of the wrapped optimizer's class; see the module
    docstring. Attributes of its own are prefixed `_hvd_`."""

    def _hvd_setup(self, named_parameters, compression, backward_passes_per_step):
        self._compression = compression
        self.op = Adasum
        self.process_set = global_process_set
        self._parameter_names = parameter_names(self.param_groups, named_parameters)
        self._hvd_params = [p for group in self.param_groups for p in group["params"]
                            if p.requires_grad]
        self._hvd_start = {}     # parameter -> its value before the local step
        self._hvd_pending = {}   # parameter -> (handle, compression ctx), in submission order
        self.set_backward_passes_per_step(backward_passes_per_step)
        register_hooks(self, self._hvd_params)

    # ------------------------------------------------------------ public API

    def set_backward_passes_per_step(self, passes):
        """Combine updates every `passes` backward passes (gradients
        accumulate locally in between); restarts the count."""
        check_passes(passes)
        self.backward_passes_per_step = passes
        self._hvd_delay = dict.fromkeys(self._hvd_params, passes)

    def synchronize(self):
        """No-op (upstream): the Adasum optimizer combines in step()."""

    @contextmanager
    def skip_synchronize(self):
        raise AssertionError(_ERR_SKIP_SYNCHRONIZE)
        yield  # pragma: no cover  (makes this a generator, as contextmanager needs)

    def step(self, closure=None):
        """Runs `closure` (if given), completes every parameter's local step
        and Adasum combination, and writes start + adasum(delta) into each
        parameter. Blocks; raises HorovodInternalError if a collective failed
        (the per-step state is reset either way)."""
        loss = closure() if closure is not None else None
        try:
            for p in self._hvd_params:
                if p not in self._hvd_pending:
                    self._hvd_submit(p)
            for p, (handle, ctx) in self._hvd_pending.items():
                delta = self._compression.decompress(synchronize(handle), ctx)
                start = self._hvd_start[p]
                with torch.no_grad():
                    start.add_(delta.to(start.dtype))
                    p.copy_(start)
        finally:
            self._hvd_pending.clear()
            self.set_backward_passes_per_step(self.backward_passes_per_step)
        return loss

    def zero_grad(self, set_to_none=True):
        """Like torch's zero_grad. Raises AssertionError while deltas are
        being combined; a partial accumulation restarts."""
        if self._hvd_pending:
            raise AssertionError(ERR_ZERO_GRAD_IN_FLIGHT)
        self.set_backward_passes_per_step(self.backward_passes_per_step)
        return super().zero_grad(set_to_none=set_to_none)

    def load_state_dict(self, *args, **kwargs):
        self._hvd_pending.clear()
        self.set_backward_passes_per_step(self.backward_passes_per_step)
        return super().load_state_dict(*args, **kwargs)

    # --------------------------------------------------------------- internals

    def _hvd_grad_ready(self, p):
        """Hook body: p.grad now holds this pass's accumulated gradient."""
        delay = self._hvd_delay[p]
        if delay <= 0:
            raise AssertionError(ERR_TOO_MANY_PASSES)
        self._hvd_delay[p] = delay - 1
        if delay == 1:
            self._hvd_submit(p)

    def _hvd_submit(self, p):
        start = self._hvd_start.get(p)
        if start is None:
            start = self._hvd_start[p] = torch.empty_like(p, requires_grad=False)
        with torch.no_grad():
            start.copy_(p)
        self._hvd_local_step(p)
        with torch.no_grad():
            delta = p.detach() - start
            p.copy_(start)
        compressed, ctx = self._compression.compress(delta)
        handle = allreduce_async_(compressed, name=self._parameter_names[p], op=Adasum)
        self._hvd_pending[p] = (handle, ctx)

    def _hvd_local_step(self, p):
        """The wrapped optimizer's step restricted to p (other parameters are
        hidden from every param group for the call)."""
        stashed = [group["params"] for group in self.param_groups]
        try:
            for group, params in zip(self.param_groups, stashed):
                group["params"] = [p] if any(p is q for q in params) else []
            super().step()
        finally:
            for group, params in zip(self.param_groups, stashed):
                group["params"] = params
