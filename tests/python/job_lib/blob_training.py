"""A small training run shared by the job scripts of test_mpi_launch.py and
test_multihost.py (mpi_scripts/, multihost_scripts/), which put this
directory on sys.path."""
import os
import signal

import torch

import horovod.torch as hvd


def train(die_at=-1, dying_rank=None):
    """Trains a small MLP on 4 Gaussian blobs with DistributedOptimizer for
    60 steps (each rank its shard, different initial weights fixed by
    broadcast_parameters); asserts the loss fell to under half and that every
    rank ends with identical parameters. Returns (first loss, last loss).
    Rank `dying_rank` SIGKILLs itself at step `die_at` (fault tests)."""
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
        if step == die_at and hvd.rank() == dying_rank:
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
