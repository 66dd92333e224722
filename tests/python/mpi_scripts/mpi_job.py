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
import signal
import sys

import torch

import horovod.torch as hvd


def check_topology():
    size = int(os.environ.get("OMPI_COMM_WORLD_SIZE") or os.environ["PMI_SIZE"])
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ["PMI_RANK"])
    assert (hvd.size(), hvd.rank()) == (size, rank), (hvd.size(), hvd.rank(), size, rank)
    assert hvd.local_size() == size and hvd.local_rank() == rank, "one host: local = global"
    assert (hvd.cross_size(), hvd.cross_rank()) == (1, 0)
    assert hvd.mpi_enabled() and hvd.mpi_built()
    total = hvd.allreduce(torch.tensor([rank + 1.0]), op=hvd.Sum, name="topology")
    assert total.item() == size * (size + 1) / 2, total


def train(die_at):
    torch.manual_seed(1234 + hvd.rank())  # different init everywhere: broadcast must fix it
    g = torch.Generator().manual_seed(0)
    centers = torch.randn(4, 16, generator=g) * 2.0
    labels = torch.randint(0, 4, (2048,), generator=g)
    x = centers[labels] + torch.randn(2048, 16, generator=g)
    x, labels = x[hvd.rank()::hvd.size()], labels[hvd.rank()::hvd.size()]
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05),
                                   named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    losses = []
    for step in range(60):
        if step == die_at and hvd.rank() == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        i = (step * 64) % (len(x) - 64)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x[i:i + 64]), labels[i:i + 64])
        loss.backward()
        opt.step()
        losses.append(hvd.allreduce(loss.detach(), name="loss").item())
    assert losses[-1] < 0.5 * losses[0], f"loss did not fall: {losses[0]} -> {losses[-1]}"
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    every = hvd.allgather(flat.unsqueeze(0), name="params")
    assert all(torch.equal(every[0], every[r]) for r in range(hvd.size())), "parameters differ"
    return losses[0], losses[-1]


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
        first, last = train(a.die_at)
        detail = f" loss {first:.3f} -> {last:.3f}, parameters agree"
    sys.stdout.write(f"rank {hvd.rank()} ok size {hvd.size()} threads "
                     f"{hvd.mpi_threads_supported()}{detail}\n")  # one write: no interleaving
    sys.stdout.flush()
    hvd.shutdown()


if __name__ == "__main__":
    main()
