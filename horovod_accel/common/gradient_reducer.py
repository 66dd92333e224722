"""GradientReducer: reducing one step's gradients all at once, for the
wrappers that get every gradient together (TensorFlow's gradient tape and
optimizers, Keras 3's optimizer on any backend). torch's DistributedOptimizer
instead submits buckets from gradient hooks, over the same buckets.py.

`reduce(grads, sources)` returns the gradients reduced with `op` over
`process_set`, in order:
- a gradient that is None stays None (every rank must then lack it too: the
  set of gradients a model produces must not depend on the rank);
- a gradient of a source registered local (`register_local`) is not reduced;
  with scale_local_gradients it is divided by the set size, so local and
  averaged gradients keep one scale (upstream's rule);
- sparse gradients are reduced one by one by the adapter (allgathers),
  unless sparse_as_dense, which densifies them (always, even when nothing
  is reduced);
- dense gradients are compressed and reduced in buckets planned by
  buckets.py (groups=None: automatic buckets of one dtype up to
  DEFAULT_BUCKET_BYTES; an int or a list of lists of variables: upstream's
  explicit groups): a bucket of one gradient is an allreduce, a larger one a
  grouped allreduce, named '<name>.<first index>' so names match across
  ranks for the same model.
On a rank outside `process_set`, or when the set has a single rank, the
gradients come back unreduced (upstream skips the allreduce there too).

The framework is reached only through `ops` (a ReduceOps); whether calls
block (eager) or build graph ops (TF graphs, tf.function) is the ops'.
"""
import contextlib

from horovod_accel.common import buckets as _buckets
from horovod_accel.common import optimizer_args as _args
from horovod_accel.common.elastic import in_elastic_job


class ReduceOps:
    """What GradientReducer needs from a framework (static methods)."""

    #: what `groups` entries must be, for error messages ('tf.Variable')
    variable_type = "variable"

    @staticmethod
    def is_variable(x):
        raise NotImplementedError

    @staticmethod
    def is_sparse(grad):
        raise NotImplementedError

    @staticmethod
    def to_dense(grad):
        raise NotImplementedError

    @staticmethod
    def describe(grad):
        """(bytes, dtype key) of a gradient; bytes None if unknown."""
        raise NotImplementedError

    @staticmethod
    def divide(grad, n):
        raise NotImplementedError

    @staticmethod
    def allreduce(tensor, **kwargs):
        """kwargs: compression, op, prescale_factor, postscale_factor,
        process_set, name, device_dense."""
        raise NotImplementedError

    @staticmethod
    def grouped_allreduce(tensors, **kwargs):
        raise NotImplementedError

    @staticmethod
    def sparse_allreduce(grad, op, name, process_set, device_sparse):
        raise NotImplementedError

    @staticmethod
    def name_scope(name):
        return contextlib.nullcontext()


class GradientReducer:
    """Reduces gradients for one wrapper (tape or optimizer); see the module
    docstring. Arguments are upstream's (already resolved: groups, not
    num_groups); raises ValueError for invalid ones."""

    def __init__(self, ops, name, device_dense, device_sparse, compression, sparse_as_dense, op,
                 gradient_predivide_factor, groups, process_set, scale_local_gradients=True):
        _args.check_predivide(op, gradient_predivide_factor)
        _args.check_process_set(process_set)
        _buckets.validate_groups(groups, ops.is_variable, ops.variable_type)
        self.ops = ops
        self.name = name
        self.device_dense = device_dense
        self.device_sparse = device_sparse
        self.compression = compression
        self.sparse_as_dense = sparse_as_dense
        self.op = op
        self.groups = groups
        self.process_set = process_set
        self.scale_local_gradients = scale_local_gradients
        self.prescale, self.postscale = _args.predivide_scales(op, gradient_predivide_factor)
        self._local_sources = []     # compared by identity (variables may be unhashable)

    def register_local(self, source):
        """Gradients of `source` stay local (never reduced)."""
        if not self.is_local(source):
            self._local_sources.append(source)

    def is_local(self, source):
        return any(s is source for s in self._local_sources)

    def reduce(self, grads, sources):
        """The reduced gradients, parallel to `grads` / `sources`."""
        grads, sources = list(grads), list(sources)
        if len(grads) != len(sources):
            raise ValueError(f"got {len(grads)} gradients for {len(sources)} variables")
        out = list(grads)
        # At size 1 nothing needs reducing, except in an elastic job: a traced
        # TF function keeps this decision after the job grows, so it must
        # always reduce (an allreduce of one rank is the identity).
        reduce_now = bool(self.process_set.included()) and (
            self.process_set.size() > 1 or in_elastic_job())
        dense, sparse = [], []
        for i, (g, s) in enumerate(zip(grads, sources)):
            if g is None:
                continue
            if self.sparse_as_dense and self.ops.is_sparse(g):
                g = grads[i] = out[i] = self.ops.to_dense(g)   # whether reduced or not
            if self.is_local(s):
                out[i] = self._scale_local(g)
            elif not reduce_now:
                continue
            elif self.ops.is_sparse(g) and not self.sparse_as_dense:
                sparse.append(i)
            else:
                dense.append(i)
        with self.ops.name_scope(self.name + "_Allreduce"):
            for i in sparse:
                out[i] = self.ops.sparse_allreduce(grads[i], self.op, f"{self.name}.{i}",
                                                   self.process_set, self.device_sparse)
            for bucket in self._plan([sources[i] for i in dense], dense, grads):
                tensors = [self.ops.to_dense(grads[i]) for i in bucket.params]
                kwargs = dict(device_dense=self.device_dense, compression=self.compression,
                              op=self.op, prescale_factor=self.prescale,
                              postscale_factor=self.postscale, process_set=self.process_set,
                              name=f"{self.name}.{bucket.name}")
                if len(tensors) == 1:
                    reduced = [self.ops.allreduce(tensors[0], **kwargs)]
                else:
                    reduced = self.ops.grouped_allreduce(tensors, **kwargs)
                for i, r in zip(bucket.params, reduced):
                    out[i] = r
        return out

    def _plan(self, dense_sources, dense_index, grads):
        """Buckets of gradient indices: buckets.py over one slot per gradient
        (a source may appear twice); each bucket's `params` become indices
        into grads and its name the first index."""
        slots = [_Slot(i, grads[i], self.ops) for i in dense_index]
        groups = self.groups
        if isinstance(groups, list):
            groups = [[slot for v in group for slot, s in zip(slots, dense_sources) if s is v]
                      for group in groups]
        plan = _buckets.plan_buckets(slots, [str(i) for i in dense_index], groups,
                                     _buckets.DEFAULT_BUCKET_BYTES, _Slot.describe)
        for bucket in plan:
            bucket.params = tuple(slot.index for slot in bucket.params)
        return plan

    def _scale_local(self, g):
        if not self.scale_local_gradients or not self.process_set.included():
            return g
        return self.ops.divide(g, self.process_set.size())


class _Slot:
    """One gradient to reduce, as buckets.py sees it."""

    __slots__ = ("index", "grad", "ops")

    def __init__(self, index, grad, ops):
        self.index = index
        self.grad = grad
        self.ops = ops

    def describe(self):
        """(bytes, bucket key); an unknown size gets a bucket of its own."""
        nbytes, key = self.ops.describe(self.grad)
        return (_buckets.DEFAULT_BUCKET_BYTES + 1 if nbytes is None else nbytes), key
