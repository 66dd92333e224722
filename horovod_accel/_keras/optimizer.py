"""DistributedOptimizer for Keras 3 optimizers (upstream
`horovod.tensorflow.keras.DistributedOptimizer` / `horovod.keras`).

Keras 3 optimizers take gradients through `apply(grads, variables)`
(`apply_gradients(grads_and_vars)` and model.fit's train step both end
there), so the wrapper overrides `apply`: the gradients are reduced across
the process set (the backend's GradientReducer) and then handed to the
wrapped optimizer's own apply (loss-scale unscaling, clipping, weight decay,
update). With backward_passes_per_step > 1 they are first summed locally and
reduced and applied every that many steps (the optimizer's `iterations` then
counts applied steps only).

Keras 2's `compute_gradients` / `_compute_gradients` (which upstream's
wrapper overrode to reduce) are provided too on the TensorFlow backend: they
return reduced gradients, and apply_gradients() of exactly those gradients
does not reduce them again.

`DistributedOptimizer(opt)` returns a new optimizer of a dynamic subclass of
type(opt) (so isinstance holds), created from `opt.get_config()` like
upstream; its class keeps opt's name and module, so a model saved with it
loads back with the plain optimizer (hvd.load_model wraps it again).

jit_compile: the Horovod ops have no XLA kernels. model.compile's default
jit_compile="auto" picks no XLA on CPU-only TensorFlow, so model.fit works
unchanged there; where XLA is chosen (jit_compile=True, or "auto" with a
GPU), the first train step raises a ValueError telling to compile with
jit_compile=False (docs/tensorflow_keras.md).
"""
import warnings

import keras

from horovod_accel.common import buckets as _buckets
from horovod_accel.common import optimizer_args as _args


class _DistributedOptimizerMixin:
    """Put in front of the wrapped optimizer's class. Attributes of its own
    are prefixed `_hvd_`."""

    def _hvd_setup(self, backend, reducer, passes, average_aggregated_gradients):
        self._hvd_backend = backend
        self._hvd_reducer = reducer
        self._hvd_aggregator = None
        self.backward_passes_per_step = passes
        if passes > 1:
            # Its accumulators are not optimizer variables: they are neither
            # saved with the model nor broadcast (they are zero between steps
            # that apply), so a saved model loads into the plain optimizer.
            self._hvd_aggregator = backend.aggregator(passes, average_aggregated_gradients,
                                                      reducer)

    def register_local_var(self, var):
        """Gradients of `var` are not reduced (a worker-local variable)."""
        self._hvd_reducer.register_local(var)

    def compute_gradients(self, loss, var_list, tape=None):
        """Keras 2's optimizer API, kept from upstream's wrapper: the reduced
        gradients of `loss` as a list of (gradient, variable); see
        _compute_gradients."""
        return self._compute_gradients(loss, var_list, None, tape)

    def _compute_gradients(self, loss, var_list, grad_loss=None, tape=None):
        """Gradients of `loss` (a callable, or a tensor recorded on `tape`)
        with respect to `var_list`, reduced across the process set like
        apply() would (with backward_passes_per_step > 1: accumulated, and
        reduced on every N-th pass), as a list of (gradient, variable).
        apply_gradients() given exactly these gradients applies them without
        reducing them again. TensorFlow backend only."""
        grads, variables = self._hvd_backend.compute_gradients(loss, var_list, grad_loss, tape)
        if self._hvd_aggregator is None:
            reduced = self._hvd_reducer.reduce(grads, variables)
        else:
            reduced = self._hvd_aggregator.compute(grads, variables)
        # object.__setattr__: Keras would track a list attribute.
        object.__setattr__(self, "_hvd_reduced", tuple(reduced))
        return list(zip(reduced, variables))

    def _hvd_take_reduced(self, grads):
        """True if `grads` are the gradients the last _compute_gradients
        returned (the same objects), which are reduced already."""
        reduced = getattr(self, "_hvd_reduced", None)
        object.__setattr__(self, "_hvd_reduced", None)
        return (reduced is not None and len(reduced) == len(grads)
                and all(a is b for a, b in zip(reduced, grads)))

    def build(self, variables):
        super().build(variables)
        if self._hvd_aggregator is not None:
            self._hvd_aggregator.build(list(variables))

    def apply(self, grads, trainable_variables=None):
        """Reduces `grads` across the process set, then applies them with the
        wrapped optimizer (every backward_passes_per_step-th call)."""
        self._hvd_backend.check_traceable()
        grads = list(grads)
        if trainable_variables is None:
            if not self.built:
                return super().apply(grads, trainable_variables)   # Keras raises its error
            variables = list(self._trainable_variables)
        else:
            trainable_variables = list(trainable_variables)
            variables = trainable_variables
            if not self.built:
                with keras.name_scope(self.name, caller=self):
                    self.build(variables)
                self.built = True
        already_reduced = self._hvd_take_reduced(grads)
        if self._hvd_aggregator is None:
            if not already_reduced:
                grads = self._hvd_reducer.reduce(grads, variables)
            return super().apply(grads, trainable_variables)
        reduced = grads if already_reduced else self._hvd_aggregator.compute(grads, variables)
        self._hvd_aggregator.apply(lambda: super(_DistributedOptimizerMixin, self).apply(
            reduced, trainable_variables))


def create_distributed_optimizer(backend, optimizer, name, device_dense, device_sparse,
                                 compression, sparse_as_dense, gradient_predivide_factor, op,
                                 backward_passes_per_step, average_aggregated_gradients,
                                 num_groups, groups, process_set, scale_local_gradients):
    """The shared body of every Keras DistributedOptimizer(); see the module
    docstring and upstream's argument documentation."""
    if isinstance(optimizer, _DistributedOptimizerMixin):
        raise ValueError("optimizer is already a DistributedOptimizer; wrap the plain Keras "
                         "optimizer once.")
    if not isinstance(optimizer, keras.optimizers.Optimizer):
        raise ValueError(f"DistributedOptimizer wraps a Keras 3 optimizer "
                         f"(keras.optimizers.Optimizer), got {type(optimizer).__name__}; for "
                         f"tf.compat.v1.train optimizers use horovod.tensorflow."
                         f"DistributedOptimizer.")
    if op == backend.hvd.Adasum:
        raise ValueError("op == Adasum is not supported yet with Keras")
    _args.check_backward_passes(backward_passes_per_step)
    groups = _buckets.resolve_groups(num_groups, groups)
    if optimizer.built:
        warnings.warn("DistributedOptimizer: the optimizer was already built; the wrapper is a "
                      "new optimizer created from its config and starts without its state "
                      "(wrap the optimizer before training, or use hvd.load_model).")
    reducer = backend.gradient_reducer(
        name or f"Distributed{type(optimizer).__name__}", device_dense, device_sparse,
        compression, sparse_as_dense, op, gradient_predivide_factor, groups, process_set,
        scale_local_gradients)
    distributed = wrap_class(optimizer.__class__).from_config(optimizer.get_config())
    distributed._hvd_setup(backend, reducer, backward_passes_per_step,
                           average_aggregated_gradients)
    return distributed


def wrap_class(cls):
    """The dynamic subclass (mixin, cls), with cls's name and module."""
    return type(cls.__name__, (_DistributedOptimizerMixin, cls), {"__module__": cls.__module__})


def is_distributed(optimizer):
    return isinstance(optimizer, _DistributedOptimizerMixin)
