"""The communication libraries benchmarks/jax_collectives.py compares, each
behind the same small interface (a "backend"), so one measurement code
(jax_worker.py) times them all.

A backend has:
  name, rank, size
  in_jit              True: allreduce_sum / average_grads take traced values and
                      are called inside jax.jit; False: they take concrete jax
                      arrays and run on the host between jitted functions.
  allreduce_sum(x)    Sum over ranks of one float32 array (out of place).
  average_grads(gs)   the list of gradient leaves averaged over ranks, each
                      library's usual idiom (see the classes).
  barrier()           returns once every rank has called it.
  max_over_ranks(vs)  elementwise max over ranks of a list of floats.
  finish()            end of the job (collective: every rank calls it).

Only the module a peer needs is imported: each peer runs in its own launcher
and venv (mpi4jax lives in .venv-mpi4jax, without horovod_accel's core).
"""
import jax
import jax.numpy as jnp
import numpy as np


class HvdaBackend:
    """horovod_accel inside jax.jit through its public API: an op called on
    traced values is staged as an XLA custom call."""

    name = "hvda"
    in_jit = True

    def __init__(self):
        import horovod_accel.jax as hvd
        hvd.init()
        self._hvd = hvd
        self.api = "horovod_accel.jax"
        self.rank, self.size = hvd.rank(), hvd.size()
        self._max = jax.jit(lambda v: hvd.allreduce(v, op=hvd.Max))
        self._one = jnp.zeros((1,), jnp.float32)

    def allreduce_sum(self, x):
        return self._hvd.allreduce(x, op=self._hvd.Sum)

    def average_grads(self, grads):
        # One grouped op for the whole pytree: the core fuses it (one custom call).
        return self._hvd.grouped_allreduce(list(grads), op=self._hvd.Average)

    def barrier(self):
        # An allreduce completes on no rank before every rank has submitted it.
        self._max(self._one).block_until_ready()

    def max_over_ranks(self, values):
        return np.asarray(self._max(jnp.asarray(values, jnp.float32))).tolist()

    def finish(self):
        self.barrier()
        self._hvd.shutdown()


class _MpiWorld:
    """MPI_COMM_WORLD through mpi4py: the control calls both MPI peers share."""

    def __init__(self):
        from mpi4py import MPI
        self._MPI = MPI
        self.comm = MPI.COMM_WORLD
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()

    def barrier(self):
        self.comm.Barrier()

    def max_over_ranks(self, values):
        a = np.asarray(values, dtype=np.float64)
        self.comm.Allreduce(self._MPI.IN_PLACE, a, op=self._MPI.MAX)
        return a.tolist()

    def finish(self):
        self.comm.Barrier()


class Mpi4jaxBackend(_MpiWorld):
    """mpi4jax inside jax.jit (its ops are XLA custom calls over MPI_COMM_WORLD's
    clone). Gradients: one mpi4jax.allreduce(SUM) per leaf, then / size (MPI
    has no average; XLA fuses the division into the SGD update)."""

    name = "mpi4jax"
    in_jit = True

    def __init__(self):
        import mpi4jax
        super().__init__()
        self._mpi4jax = mpi4jax
        self.api = f"mpi4jax {mpi4jax.__version__}"

    def allreduce_sum(self, x):
        return self._mpi4jax.allreduce(x, op=self._MPI.SUM)

    def average_grads(self, grads):
        return [self._mpi4jax.allreduce(g, op=self._MPI.SUM) / self.size for g in grads]


class Mpi4pyBackend(_MpiWorld):
    """mpi4py's Allreduce on numpy copies of the arrays, on the host between
    jitted functions (what one writes without an in-jit library): the array
    is read as numpy (zero-copy on CPU), reduced into a new numpy buffer,
    and handed back to JAX with jnp.asarray. Gradients: one Allreduce per
    leaf, then / size on the host."""

    name = "mpi4py"
    in_jit = False

    def __init__(self):
        super().__init__()
        self.api = "mpi4py (numpy, outside jit)"

    def _sum_np(self, x):
        src = np.asarray(x)
        out = np.empty_like(src)
        self.comm.Allreduce(src, out, op=self._MPI.SUM)
        return out

    def allreduce_sum(self, x):
        return jnp.asarray(self._sum_np(x))

    def average_grads(self, grads):
        out = []
        for g in grads:
            s = self._sum_np(g)
            s /= self.size
            out.append(jnp.asarray(s))
        return out


class LocalBackend:
    """The "ideal" peer: one of N independent processes, no communication.
    Only the train step runs; its gradients are used as they are."""

    name = "ideal"
    in_jit = True
    api = "none (independent processes)"

    def __init__(self, index, count):
        self.rank, self.size = index, count

    def allreduce_sum(self, x):
        raise RuntimeError("the ideal peer does not communicate; it runs the train step only")

    def average_grads(self, grads):
        return list(grads)

    def barrier(self):
        pass

    def max_over_ranks(self, values):
        return list(values)

    def finish(self):
        pass


def make_backend(peer, index=0, count=1):
    """The backend of `peer` (hvda, mpi4jax, mpi4py, ideal); index/count: the
    ideal process's own number and how many the driver started."""
    if peer == "hvda":
        return HvdaBackend()
    if peer == "mpi4jax":
        return Mpi4jaxBackend()
    if peer == "mpi4py":
        return Mpi4pyBackend()
    if peer == "ideal":
        return LocalBackend(index, count)
    raise ValueError(f"unknown peer {peer!r}; choose from hvda, mpi4jax, mpi4py, ideal")
