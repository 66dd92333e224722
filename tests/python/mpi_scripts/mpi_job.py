"""A rank of a job started by mpirun, not horovodrun (test_mpi_launch.py).

    mpirun -np N [bash run.sh ->] python mpi_job.py [--train] [--die-at STEP]
    horovodrun --mpi -np N python mpi_job.py [--expect-env NAME=VALUE]

Checks that hvd.init() formed the job from MPI (size, ranks and local ranks
equal MPI's; the allreduce sees every rank), then optionally trains a small
MLP with DistributedOptimizer and checks that the loss fell and that every
rank ends with the same parameters. --die-at: rank 1 kills itself (SIGKILL)
at that training step. Prints one "rank R ok ..." line per rank.
"""
import argparse
import os
import sys

import torch

import horovod.torch as hvd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "job_lib"))
from blob_training import train  # noqa: E402


def check_topology():
    size = int(os.environ.get("OMPI_COMM_WORLD_SIZE") or os.environ["PMI_SIZE"])
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ["PMI_RANK"])
    assert (hvd.size(), hvd.rank()) == (size, rank), (hvd.size(), hvd.rank(), size, rank)
    assert hvd.local_size() == size and hvd.local_rank() == rank, "one host: local = global"
    assert (hvd.cross_size(), hvd.cross_rank()) == (1, 0)
    assert hvd.mpi_enabled() and hvd.mpi_built()
    total = hvd.allreduce(torch.tensor([rank + 1.0]), op=hvd.Sum, name="topology")
    assert total.item() == size * (size + 1) / 2, total


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--train", action="store_true")
    p.add_argument("--die-at", type=int, default=-1)
    p.add_argument("--expect-env", action="append", default=[],
                   help="NAME=VALUE that must be in the environment (horovodrun --mpi's settings)")
    a = p.parse_args()
    for item in a.expect_env:
        name, value = item.split("=", 1)
        assert os.environ.get(name) == value, (name, os.environ.get(name), value)
    hvd.init()
    check_topology()
    detail = ""
    if a.train:
        first, last = train(a.die_at, dying_rank=1)
        detail = f" loss {first:.3f} -> {last:.3f}, parameters agree"
    sys.stdout.write(f"rank {hvd.rank()} ok size {hvd.size()} threads "
                     f"{hvd.mpi_threads_supported()}{detail}\n")  # one write: no interleaving
    sys.stdout.flush()
    hvd.shutdown()


if __name__ == "__main__":
    main()
