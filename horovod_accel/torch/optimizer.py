"""DistributedOptimizer: data-parallel gradient averaging for any torch optimizer
(upstream `horovod.torch.optimizer`).

`DistributedOptimizer(opt, ...)` returns an instance of a dynamic subclass of
`type(opt)` (so `isinstance(d, type(opt))` holds) that shares `opt`'s
param_groups, defaults and state. A hook on every parameter fires when its
gradient has been accumulated by backward; after `backward_passes_per_step`
passes the parameter counts as ready, and once all parameters of its bucket
(horovod_accel/common/buckets.py) are ready the bucket's gradients are submitted to the
core asynchronously, so communication overlaps the rest of backward.
`step()` waits for every bucket (submitting zeros for gradients this rank did
not compute, so ranks never hang on an unused parameter), writes the reduced
gradients into `p.grad` and then runs the wrapped optimizer's step.

Buckets (horovod_accel/common/buckets.py) are planned from parameter order, shapes and
dtypes only, so every rank submits the same ops under the same names; a
bucket of one dense gradient is reduced in place in `p.grad`, without copies.
Sparse gradients go through `sparse_allreduce_async` (two allgathers) unless
`sparse_as_dense=True`.

`op=Adasum` with more than one rank dispatches to the delta-based Adasum
optimizer (optimizer_adasum.py), like upstream; with one rank it is this
class with an identity reduction. What both share (wrapping, parameter
names, hooks) is in optimizer_base.py.

Differences from upstream (docs/compat.md): `zero_grad(set_to_none=...)` is
accepted; wrapping keeps the optimizer's `defaults` and state.

Threading: hooks run on the thread running backward; nothing here blocks
except `synchronize()` (and `step()`, which calls it).
"""
import warnings
from contextlib import contextmanager

import torch

from horovod_accel.common import buckets as _buckets
from horovod_accel.common import optimizer_args as _args
from horovod_accel.common import settings
from horovod_accel.torch.compression import Compression
from horovod_accel.torch.mpi_ops import (Adasum, Average, Sum, allreduce_async_,
                                         global_process_set, grouped_allreduce_async_, size,
                                         sparse_allreduce_async, synchronize)
from horovod_accel.torch.optimizer_adasum import _DistributedAdasumOptimizer
from horovod_accel.torch.optimizer_base import (ERR_TOO_MANY_PASSES, ERR_ZERO_GRAD_IN_FLIGHT,
                                                WrappedOptimizer, check_passes, parameter_names,
                                                register_hooks, wrap)

_WARN_STEP_AFTER_SYNCHRONIZE = (
    "optimizer.step() called without optimizer.skip_synchronize() context after "
    "optimizer.synchronize(). This can cause training slowdown. You may want to consider "
    "using optimizer.skip_synchronize() context if you use optimizer.synchronize() in your code.")


def _describe(p):
    """(gradient bytes, bucket key) of a parameter, for common/buckets.py."""
    return p.numel() * p.element_size(), (p.dtype, p.device)


class _DistributedOptimizer(WrappedOptimizer):
    """Mixin placed in front of the wrapped optimizer's class; see the module
    docstring. Attributes of its own are prefixed `_hvd_` (upstream's public
    ones keep their names: backward_passes_per_step, op, process_set, ...)."""

    def _hvd_setup(self, named_parameters, compression, backward_passes_per_step, op,
                   gradient_predivide_factor, groups, sparse_as_dense, process_set):
        self._compression = compression
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        self.sparse_as_dense = sparse_as_dense
        self.process_set = process_set
        # Adasum only reaches here with one rank (elastic), where it is the identity.
        self._hvd_op = Sum if op == Adasum else op
        self._hvd_prescale, self._hvd_postscale = _args.predivide_scales(
            op, gradient_predivide_factor)

        self._parameter_names = parameter_names(self.param_groups, named_parameters)
        params = [p for group in self.param_groups for p in group["params"] if p.requires_grad]
        _buckets.validate_groups(groups, lambda p: isinstance(p, torch.Tensor), "torch.Tensor")
        self._hvd_buckets = _buckets.plan_buckets(
            params, [self._parameter_names[p] for p in params], groups,
            _buckets.DEFAULT_BUCKET_BYTES, _describe)
        self._hvd_bucket_of = {p: b for b in self._hvd_buckets for p in b.params}
        self._hvd_submitted = []     # buckets in flight, in submission order
        self._hvd_sparse_dims = {}   # parameter -> sparse_dim of its last sparse gradient
        self._hvd_started = False    # a hook fired since the last reset
        self._synchronized = False
        self._should_synchronize = True
        # Like upstream: no hooks outside the set, nor at size 1 unless elastic
        # (an elastic job may grow, and its hooks must already be in place).
        elastic = settings.read("HOROVOD_ELASTIC")
        self._hvd_hooked = bool(process_set.included()) and (process_set.size() > 1 or elastic)
        self.set_backward_passes_per_step(backward_passes_per_step)
        if self._hvd_hooked:
            register_hooks(self, params)

    # ------------------------------------------------------------ public API

    def set_backward_passes_per_step(self, passes):
        """Reduce gradients every `passes` backward passes (accumulating
        locally in between); restarts the count for every parameter."""
        check_passes(passes)
        self.backward_passes_per_step = passes
        self._hvd_full_delay = dict.fromkeys(self._hvd_bucket_of, passes)
        self._hvd_delay = dict(self._hvd_full_delay)

    def synchronize(self):
        """Blocks until every gradient is reduced and written into p.grad.
        Buckets not yet submitted are submitted now (a parameter without a
        gradient on this rank contributes zeros). Raises HorovodInternalError
        if a collective failed; the per-step state is reset either way."""
        if not self._hvd_hooked:
            self._synchronized = True
            return
        try:
            for bucket in self._hvd_buckets:
                if bucket.work is None:
                    self._hvd_submit(bucket)
            for bucket in self._hvd_submitted:
                self._hvd_finish(bucket)
        finally:
            self._hvd_reset()
        self._synchronized = True

    @contextmanager
    def skip_synchronize(self):
        """Inside this context `step()` does not synchronize; use after an
        explicit `synchronize()` (e.g. to clip the reduced gradients)."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, *args, **kwargs):
        """synchronize() (unless inside skip_synchronize(); warns if an
        explicit synchronize() already ran), then the wrapped optimizer's step."""
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn(_WARN_STEP_AFTER_SYNCHRONIZE)
            self.synchronize()
        self._synchronized = False
        return super().step(*args, **kwargs)

    def zero_grad(self, set_to_none=True):
        """Like torch's zero_grad (upstream's takes no arguments). Raises
        AssertionError while gradients are being reduced; a partial
        accumulation (fewer than backward_passes_per_step passes) restarts."""
        if self._hvd_submitted:
            raise AssertionError(ERR_ZERO_GRAD_IN_FLIGHT)
        if self._hvd_started:
            self._hvd_reset()
        return super().zero_grad(set_to_none=set_to_none)

    def load_state_dict(self, *args, **kwargs):
        self._hvd_submitted.clear()
        self._hvd_reset()
        self._synchronized = False
        self._should_synchronize = True
        return super().load_state_dict(*args, **kwargs)

    # --------------------------------------------------------------- internals

    def _hvd_grad_ready(self, p):
        """Hook body: p.grad now holds this pass's accumulated gradient."""
        self._hvd_started = True
        self._synchronized = False    # new gradients: the next step() must reduce them
        delay = self._hvd_delay[p]
        if delay <= 0:
            raise AssertionError(ERR_TOO_MANY_PASSES)
        delay -= 1
        self._hvd_delay[p] = delay
        if delay == 0:
            bucket = self._hvd_bucket_of[p]
            bucket.remaining -= 1
            if bucket.remaining == 0:
                self._hvd_submit(bucket)

    def _hvd_submit(self, bucket):
        dense_params, sent, ctxs, sparse = [], [], [], []
        for p in bucket.params:
            grad = p.grad
            if grad is None:
                # Unused on this rank this step; another rank may have a gradient.
                grad = p.grad = self._hvd_zero_grad(p)
            if grad.is_sparse:
                self._hvd_sparse_dims[p] = grad.sparse_dim()
                if not self.sparse_as_dense:
                    sparse.append((p, sparse_allreduce_async(
                        grad, name=self._parameter_names[p], op=self._hvd_op,
                        process_set=self.process_set)))
                    continue
                grad = grad.to_dense()
            compressed, ctx = self._compression.compress(grad)
            dense_params.append(p)
            sent.append(compressed)
            ctxs.append(ctx)
        work = None
        if len(sent) == 1:
            work = allreduce_async_(sent[0], name=bucket.name, op=self._hvd_op,
                                    prescale_factor=self._hvd_prescale,
                                    postscale_factor=self._hvd_postscale,
                                    process_set=self.process_set)
        elif sent:
            work = grouped_allreduce_async_(sent, name=bucket.name, op=self._hvd_op,
                                            prescale_factor=self._hvd_prescale,
                                            postscale_factor=self._hvd_postscale,
                                            process_set=self.process_set)
        bucket.work = (work, dense_params, sent, ctxs, sparse)
        self._hvd_submitted.append(bucket)

    def _hvd_finish(self, bucket):
        work, dense_params, sent, ctxs, sparse = bucket.work
        if work is not None:
            outputs = synchronize(work)
            if len(sent) == 1:
                outputs = [outputs]
            for p, out, ctx in zip(dense_params, outputs, ctxs):
                reduced = self._compression.decompress(out, ctx)
                grad = p.grad
                if grad.is_sparse:      # sparse_as_dense: hand the optimizer a sparse grad again
                    p.grad = reduced.to_sparse(grad.sparse_dim())
                elif reduced.data_ptr() != grad.data_ptr():
                    grad.copy_(reduced)
        for p, handle in sparse:
            p.grad = handle()

    def _hvd_zero_grad(self, p):
        """A zero gradient of the layout the other ranks will send: sparse
        (no entries) if p produced sparse gradients before, else dense. A
        parameter that is sparse but has never had a gradient on this rank is
        sent dense and so mismatches the other ranks' allgathers: use
        sparse_as_dense=True where a sparse parameter may be unused."""
        sparse_dim = self._hvd_sparse_dims.get(p)
        if sparse_dim is None:
            return torch.zeros_like(p)
        indices = torch.empty((sparse_dim, 0), dtype=torch.long, device=p.device)
        values = p.new_empty((0, *p.shape[sparse_dim:]))
        return torch.sparse_coo_tensor(indices, values, p.shape, check_invariants=False)

    def _hvd_reset(self):
        self._hvd_submitted.clear()
        for bucket in self._hvd_buckets:
            bucket.reset()
        self._hvd_delay.update(self._hvd_full_delay)
        self._hvd_started = False


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         num_groups=0, groups=None, sparse_as_dense=False,
                         process_set=global_process_set):
    """Wraps `optimizer` so gradients are reduced across the ranks of
    `process_set` before each step (upstream signature and semantics).

    named_parameters: (name, parameter) pairs (usually
        `model.named_parameters()`) naming every optimizer parameter uniquely;
        names must match across ranks. Default: positional names.
    compression: Compression.none / .fp16 / .bf16 for the wire format.
    backward_passes_per_step: local accumulation passes before reducing.
    op: Average (default), Sum, Min, Max, Product or Adasum. Adasum with
        size() > 1 returns upstream's delta-based Adasum optimizer
        (optimizer_adasum.py; global process set only, NotImplementedError
        otherwise; `groups` and `sparse_as_dense` do not apply).
    gradient_predivide_factor: with Average, gradients are scaled by 1/f
        before and f/size after the sum.
    groups: None (automatic buckets), an int (that many groups) or a list of
        lists of parameters reduced as one grouped allreduce each.
        `num_groups` is the deprecated alias.
    sparse_as_dense: reduce sparse gradients densely instead of by allgather.
    """
    if isinstance(optimizer, WrappedOptimizer):
        raise ValueError("optimizer is already a DistributedOptimizer; wrap the plain torch "
                         "optimizer once.")
    _args.check_predivide(op, gradient_predivide_factor)
    groups = _buckets.resolve_groups(num_groups, groups)
    _args.check_process_set(process_set)
    if op == Adasum and size() > 1:
        if process_set.process_set_id != global_process_set.process_set_id:
            raise NotImplementedError("Adasum does not support non-global process sets yet.")
        distributed = wrap(optimizer, _DistributedAdasumOptimizer)
        distributed._hvd_setup(named_parameters, compression, backward_passes_per_step)
        return distributed

    distributed = wrap(optimizer, _DistributedOptimizer)
    distributed._hvd_setup(named_parameters, compression, backward_passes_per_step, op,
                           gradient_predivide_factor, groups, sparse_as_dense, process_set)
    return distributed
