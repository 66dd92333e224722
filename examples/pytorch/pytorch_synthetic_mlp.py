"""Data-parallel training of a small MLP on a locally generated classification
task, written against upstream Horovod's API (`import horovod.torch as hvd`).

Each rank trains on its own shard; gradients are averaged with one grouped
allreduce per step; parameters start identical through broadcast. Rank 0
prints per-epoch loss and accuracy and exits non-zero if the loss did not fall.

    horovodrun -np 2 python examples/pytorch/pytorch_synthetic_mlp.py
    horovodrun -np 2 python examples/pytorch/pytorch_synthetic_mlp.py --device gcu

With --device TYPE (cuda, gcu, ...: any torch device type with a Horovod
plugin, `horovodrun --check-build` lists them), each rank trains on device
TYPE:<local rank> and the collectives run on that device's plugin.
"""
import argparse
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import horovod.torch as hvd


def make_dataset(n=4096, features=32, classes=4, seed=0):
    # The same data on every rank (same seed); each rank then takes its shard.
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(classes, features, generator=g) * 2.0
    labels = torch.randint(0, classes, (n,), generator=g)
    x = centers[labels] + torch.randn(n, features, generator=g)
    return x, labels


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--device", default="cpu",
                        help="torch device type to train on (one device per local rank)")
    args = parser.parse_args()

    hvd.init()
    device = torch.device("cpu") if args.device == "cpu" else torch.device(args.device, hvd.local_rank())
    torch.manual_seed(1234 + hvd.rank())  # different init per rank, fixed by broadcast below
    torch.set_num_threads(1)

    x, y = make_dataset()
    x, y = x[hvd.rank()::hvd.size()].to(device), y[hvd.rank()::hvd.size()].to(device)

    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)).to(device)
    for name, p in model.state_dict().items():
        hvd.broadcast_(p, root_rank=0, name=f"init.{name}")
    # Learning rate scaled by the number of workers, as Horovod recommends.
    opt = torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size(), momentum=0.9)

    where = "" if device.type == "cpu" else f" on {device.type}"
    first_loss = None
    for epoch in range(args.epochs):
        perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(epoch))
        total, correct, loss_sum, steps = 0, 0, 0.0, 0
        for i in range(0, len(x) - args.batch_size + 1, args.batch_size):
            idx = perm[i:i + args.batch_size].to(device)
            opt.zero_grad()
            out = model(x[idx])
            loss = F.cross_entropy(out, y[idx])
            loss.backward()
            grads = [p.grad for p in model.parameters()]
            averaged = hvd.grouped_allreduce(grads, op=hvd.Average, name="grads")
            for g, a in zip(grads, averaged):
                g.copy_(a)
            opt.step()
            loss_sum += loss.item()
            steps += 1
            correct += (out.argmax(1) == y[idx]).sum().item()
            total += len(idx)
        metrics = hvd.allreduce(torch.tensor([loss_sum / steps, correct / total], device=device),
                                op=hvd.Average, name="epoch_metrics")
        if first_loss is None:
            first_loss = metrics[0].item()
        if hvd.rank() == 0:
            print(f"epoch {epoch + 1}/{args.epochs}: loss {metrics[0]:.4f} "
                  f"accuracy {metrics[1]:.3f} ({hvd.size()} processes{where})", flush=True)

    final_loss = metrics[0].item()
    if hvd.rank() == 0:
        print(f"loss fell from {first_loss:.4f} to {final_loss:.4f}")
    hvd.shutdown()
    if not final_loss < first_loss:
        print("training did not reduce the loss", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
