"""Data-parallel training of a small MLP on Ray actors, written against
upstream Horovod's Ray API: `RayExecutor(settings, num_workers=N)`,
`executor.start()`, `executor.run(train_fn)`.

Every worker trains on its shard of a locally generated classification task
with hvd.DistributedOptimizer; rank 0's parameters are broadcast first. The
driver prints each rank's first and last loss and exits non-zero unless the
loss fell and every rank ended with the same parameters.

    python examples/ray/pytorch_ray_synthetic.py                  # a local Ray
    RAY_ADDRESS=auto python examples/ray/pytorch_ray_synthetic.py  # a running cluster
"""
import argparse
import sys

import ray
import torch
import torch.nn as nn
import torch.nn.functional as F

import horovod.torch as hvd
from horovod.ray import RayExecutor


def make_dataset(n=2048, features=16, classes=4, seed=0):
    # The same data on every rank (same seed); each rank then takes its shard.
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(classes, features, generator=g) * 2.0
    labels = torch.randint(0, classes, (n,), generator=g)
    return centers[labels] + torch.randn(n, features, generator=g), labels


def train_fn(epochs, batch_size, lr):
    """Runs on every worker; returns (first loss, last loss, parameter checksum)."""
    hvd.init()
    torch.manual_seed(1234 + hvd.rank())   # different init per rank, fixed by the broadcast
    torch.set_num_threads(1)
    x, y = make_dataset()
    x, y = x[hvd.rank()::hvd.size()], y[hvd.rank()::hvd.size()]

    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=lr * hvd.size(), momentum=0.9)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    losses = []
    for epoch in range(epochs):
        perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(epoch))
        epoch_loss = 0.0
        for i in range(0, len(x) - batch_size + 1, batch_size):
            idx = perm[i:i + batch_size]
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            optimizer.step()
            epoch_loss += loss.item()
        losses.append(hvd.allreduce(torch.tensor(epoch_loss), name=f"loss.{epoch}").item())
    checksum = sum(p.detach().double().sum().item() for p in model.parameters())
    return losses[0], losses[-1], checksum


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default=None,
                        help="Ray cluster address (default: RAY_ADDRESS, else a local Ray)")
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.02)
    args = parser.parse_args()

    ray.init(address=args.address)
    settings = RayExecutor.create_settings(timeout_s=30)
    executor = RayExecutor(settings, num_workers=args.num_workers, use_gpu=False)
    executor.start()
    results = executor.run(train_fn, kwargs=dict(epochs=args.epochs, batch_size=args.batch_size,
                                                 lr=args.lr))
    executor.shutdown()

    for rank, (first, last, checksum) in enumerate(results):
        print(f"rank {rank}: loss {first:.4f} -> {last:.4f}, parameter checksum {checksum:.6f}")
    fell = all(last < first for first, last, _ in results)
    same = len({round(c, 6) for _, _, c in results}) == 1
    print("loss fell on every rank" if fell else "loss did NOT fall")
    print("parameters equal on every rank" if same else "parameters DIFFER between ranks")
    return 0 if fell and same else 1


if __name__ == "__main__":
    sys.exit(main())
