"""hvd.init(comm=[ranks]) under mpirun (test_mpi_launch.py), upstream's list
form: the even MPI ranks call init(comm=<the even ranks>) and the odd ones
init(comm=<the odd ones>), so two independent jobs run; a rank passing a list
without itself gets a ValueError first. No mpi4py: the ranks come from the
launcher's variables. Prints "world R ok ..." per rank."""
import os
import sys

import torch

import horovod.torch as hvd


def main():
    world_size = int(os.environ.get("OMPI_COMM_WORLD_SIZE") or os.environ["PMI_SIZE"])
    world_rank = int(os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ["PMI_RANK"])
    mine = [r for r in range(world_size) if r % 2 == world_rank % 2]
    others = [r for r in range(world_size) if r % 2 != world_rank % 2]
    try:
        hvd.init(comm=others)
        raise AssertionError("init with a list that lacks this rank must fail")
    except ValueError as e:
        assert f"called by MPI rank {world_rank}, which is not in the list" in str(e), e
    hvd.init(comm=mine)
    assert (hvd.size(), hvd.rank()) == (len(mine), mine.index(world_rank)), (hvd.size(), hvd.rank())
    got = hvd.allreduce(torch.tensor([float(world_rank)]), op=hvd.Sum, name="x").item()
    assert got == sum(mine), (got, mine)
    sys.stdout.write(f"world {world_rank} ok sub {hvd.rank()}/{hvd.size()} sum {got:.0f}\n")
    sys.stdout.flush()
    hvd.shutdown()


if __name__ == "__main__":
    main()
