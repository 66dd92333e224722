"""LocalAggregator: backward_passes_per_step > 1 for the TF1 and Keras
DistributedOptimizers (upstream's LocalGradientAggregationHelper).

Gradients are summed locally into one accumulator per variable for
`passes` steps; on every `passes`-th step the sums (divided by `passes` if
average_aggregated_gradients) are reduced across ranks and the wrapped
optimizer applies them, then the accumulators restart from zero. On the other
steps nothing is applied (the wrapped optimizer's step counters do not move).

Built from tf ops and tf.cond only, so it works in TF1 graphs (Session,
MonitoredTrainingSession), inside tf.function (Keras model.fit) and eagerly.
The accumulators and the pass counter are created by `make_variable(shape,
dtype, name)` -- TF1 local variables, or plain tf.Variables for Keras -- before
the first step (`build`). Contract per step: `compute()` once, then
`apply()` once with the gradients compute() returned.
"""
import tensorflow as tf


class LocalAggregator:

    def __init__(self, passes, average_aggregated_gradients, reducer, make_variable):
        self.passes = passes
        self.average = average_aggregated_gradients
        self.reducer = reducer
        self.make_variable = make_variable
        self.counter = None
        self.accumulators = None   # list parallel to the sources given to build()
        self._sources = None
        self._is_boundary = None

    def build(self, sources):
        """Creates the counter and one accumulator per source (idempotent)."""
        if self.counter is not None:
            return
        self._sources = list(sources)
        self.counter = self.make_variable([], tf.int64, "hvd_backward_passes")
        self.accumulators = [self.make_variable(s.shape, _dtype(s), "hvd_aggregated_gradient")
                             for s in self._sources]

    def _accumulator(self, source):
        for s, acc in zip(self._sources, self.accumulators):
            if s is source:
                return acc
        raise ValueError(f"DistributedOptimizer(backward_passes_per_step={self.passes}) got a "
                         f"gradient for a variable it was not built with ({_name(source)}); "
                         f"pass every trainable variable on the first step.")

    def compute(self, grads, sources):
        """Accumulates this pass; returns the gradients to apply (the reduced
        sums on a boundary step, the local sums otherwise; None stays None)."""
        self.build(sources)
        present = [i for i, g in enumerate(grads) if g is not None]
        accs = [self._accumulator(sources[i]) for i in present]
        updates = [acc.assign_add(tf.cast(tf.convert_to_tensor(grads[i]), acc.dtype))
                   for i, acc in zip(present, accs)]
        with tf.control_dependencies(updates):
            passes_done = tf.identity(self.counter) + 1
            self._is_boundary = tf.equal(passes_done % self.passes, 0)

            def local():
                return [tf.identity(acc) for acc in accs]

            def reduced():
                values = local()
                if self.average:
                    values = [v / tf.cast(self.passes, v.dtype) for v in values]
                return self.reducer.reduce(values, [sources[i] for i in present])

            result = tf.cond(self._is_boundary, reduced, local) if present else []
        out = [None] * len(grads)
        for i, r in zip(present, result if isinstance(result, (list, tuple)) else [result]):
            out[i] = r
        return out

    def apply(self, apply_fn, skip_fn=None):
        """Runs apply_fn() (the wrapped optimizer's apply) on boundary steps,
        then clears the accumulators, and skip_fn() (if given: e.g. advancing
        a TF1 global step) on the others; counts the pass every step. Returns
        the counter update (an op in graph mode)."""
        if self._is_boundary is None:
            raise ValueError("DistributedOptimizer: apply_gradients() was called before "
                             "compute_gradients(); with backward_passes_per_step > 1 the "
                             "gradients must come from the DistributedOptimizer.")

        def apply_and_reset():
            result = apply_fn()
            deps = [result] if result is not None and not tf.executing_eagerly() else []
            with tf.control_dependencies(deps):
                resets = [acc.assign(tf.zeros_like(acc)) for acc in self.accumulators]
            with tf.control_dependencies(resets):
                return tf.constant(True)

        def skip():
            result = skip_fn() if skip_fn is not None else None
            deps = [result] if result is not None and not tf.executing_eagerly() else []
            with tf.control_dependencies(deps):
                return tf.constant(False)

        applied = tf.cond(self._is_boundary, apply_and_reset, skip)
        with tf.control_dependencies([applied]):
            return self.counter.assign_add(1)


def _dtype(source):
    dtype = source.dtype
    return tf.as_dtype(dtype).base_dtype if not isinstance(dtype, str) else tf.as_dtype(dtype)


def _name(source):
    return getattr(source, "path", None) or getattr(source, "name", repr(source))
