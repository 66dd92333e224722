"""mpi4py / Open MPI allreduce worker; started by benchmarks/allreduce.py via mpirun.

Measures comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM) on numpy float32; the
async batch is comm.Iallreduce(MPI.IN_PLACE, ...) x count, then MPI.Request.Waitall.
"""
import numpy as np
from mpi4py import MPI

import bench_common

try:  # same rule as the other workers, though nothing here uses torch
    import torch
    torch.set_num_threads(1)
except ImportError:
    pass


class MpiBackend:
    name = "open_mpi"

    def __init__(self):
        self.comm = MPI.COMM_WORLD
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()

    def barrier(self):
        self.comm.Barrier()

    def make_buffer(self, nelems, fill):
        return np.full(nelems, fill, dtype=np.float32)

    def allreduce_inplace(self, buf):
        self.comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)

    def async_batch(self, bufs):
        reqs = [self.comm.Iallreduce(MPI.IN_PLACE, b, op=MPI.SUM) for b in bufs]
        MPI.Request.Waitall(reqs)

    def max_over_ranks(self, values):
        a = np.asarray(values, dtype=np.float64)
        self.comm.Allreduce(MPI.IN_PLACE, a, op=MPI.MAX)
        return a.tolist()

    def to_list(self, buf):
        return buf.tolist()

    def finish(self):
        self.comm.Barrier()


if __name__ == "__main__":
    bench_common.main(MpiBackend)
