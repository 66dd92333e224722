"""hvd.init(comm=<mpi4py sub-communicator>) (test_mpi_launch.py): the world
splits by rank parity and each half runs its own Horovod job; mpi4py calls
mix with Horovod ops in the same process. Prints "world R ok ..." per rank."""
import sys

import torch
from mpi4py import MPI

import horovod.torch as hvd


def main():
    world = MPI.COMM_WORLD
    sub = world.Split(world.rank % 2, world.rank)
    hvd.init(comm=sub)
    assert (hvd.size(), hvd.rank()) == (sub.size, sub.rank), (hvd.size(), hvd.rank())
    got = hvd.allreduce(torch.tensor([float(world.rank)]), op=hvd.Sum, name="x").item()
    want = sum(r for r in range(world.size) if r % 2 == world.rank % 2)
    assert got == want, (got, want)
    assert world.allreduce(1) == world.size  # mpi4py beside Horovod's thread
    got = hvd.broadcast_object(f"from {world.rank}", root_rank=0, name="who")
    assert got == f"from {world.rank % 2}", got
    sys.stdout.write(f"world {world.rank} ok sub {hvd.rank()}/{hvd.size()} {got!r}\n")
    sys.stdout.flush()
    hvd.shutdown()


if __name__ == "__main__":
    main()
