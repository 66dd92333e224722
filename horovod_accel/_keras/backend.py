"""KerasBackend: what the shared Keras code needs from a framework adapter.

Each adapter (horovod_accel.tensorflow.keras, horovod_accel.keras for the
torch backend) provides one instance. Every method is collective where it
communicates (all ranks call it in the same order) and blocks until done.
"""


class KerasBackend:
    """Interface; see the TensorFlow and torch implementations."""

    #: the adapter module (init, rank, size, Average, global_process_set, ...)
    hvd = None

    def gradient_reducer(self, name, device_dense, device_sparse, compression, sparse_as_dense,
                         op, gradient_predivide_factor, groups, process_set,
                         scale_local_gradients):
        """An object with reduce(grads, variables) -> reduced grads (None kept)."""
        raise NotImplementedError

    def aggregator(self, passes, average_aggregated_gradients, reducer):
        """A LocalAggregator-like object for backward_passes_per_step > 1
        (build(variables), compute(grads, variables), apply(apply_fn)), or
        raise ValueError if the backend cannot aggregate inside model.fit."""
        raise NotImplementedError

    def compute_gradients(self, loss, var_list, grad_loss, tape):
        """(grads, variables): the local gradients of `loss` (a callable, or a
        tensor recorded on `tape`) with respect to var_list (Keras 2's
        optimizer.compute_gradients)."""
        raise NotImplementedError(
            "compute_gradients()/_compute_gradients() (Keras 2's optimizer API) need the "
            "TensorFlow backend; compute the gradients yourself and call apply_gradients().")

    def check_traceable(self):
        """Raise a clear error if the current trace cannot run Horovod ops
        (e.g. an XLA compilation)."""

    def allreduce(self, value, name, op, prescale_factor, postscale_factor, compression):
        """Returns the reduced value as a numpy array (or backend tensor)."""
        raise NotImplementedError

    def allgather(self, value, name):
        raise NotImplementedError

    def broadcast(self, value, root_rank, name):
        raise NotImplementedError

    def reducescatter(self, value, name, op):
        raise NotImplementedError

    def broadcast_variables(self, variables, root_rank):
        """Assigns every Keras variable its value on root_rank."""
        raise NotImplementedError
