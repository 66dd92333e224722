"""Data-parallel training of a small CNN on handwritten digits, written as a
classic Horovod PyTorch script (`import horovod.torch as hvd`).

The data is scikit-learn's digits set (1797 images of 8x8 pixels, shipped
inside the package: nothing is downloaded), split 80/20 into train and test
with a fixed seed. Each rank trains on its DistributedSampler shard; gradients
are averaged by hvd.DistributedOptimizer; rank 0 prints per-epoch progress,
saves a checkpoint per epoch (with --checkpoint-dir) and the final test
accuracy. A restarted job resumes from the newest checkpoint: rank 0 loads it
and broadcasts the model and optimizer state to the others.

    horovodrun -np 2 python examples/pytorch/pytorch_mnist.py
    horovodrun -np 2 python examples/pytorch/pytorch_mnist.py --checkpoint-dir /tmp/ckpt
    horovodrun -np 2 python examples/pytorch/pytorch_mnist.py --compile

--compile trains `torch.compile(model)` (inductor); with the same seed its
loss curve follows the eager run's (inductor is told to draw dropout masks
from torch's own generator, as eager does). Checkpoints hold the plain
module's state_dict, so compiled and eager runs resume from each other's.

Exits non-zero if the final test accuracy is not above --min-accuracy (0.9),
if the training loss did not fall, or if the ranks' parameters differ at the
end (rank 0 prints their digest).
"""
import argparse
import hashlib
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data
import torch.utils.data.distributed
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import horovod.torch as hvd


def parse_args():
    parser = argparse.ArgumentParser(description="PyTorch digits (8x8 MNIST) example")
    parser.add_argument("--batch-size", type=int, default=32, help="input batch size per rank")
    parser.add_argument("--test-batch-size", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--lr", type=float, default=0.05, help="learning rate for one rank")
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--no-cuda", action="store_true", default=False)
    parser.add_argument("--fp16-allreduce", action="store_true", default=False,
                        help="use fp16 compression during allreduce")
    parser.add_argument("--use-adasum", action="store_true", default=False,
                        help="use Adasum instead of averaging")
    parser.add_argument("--gradient-predivide-factor", type=float, default=1.0)
    parser.add_argument("--checkpoint-dir", default=None,
                        help="save a checkpoint per epoch here and resume from the newest")
    parser.add_argument("--min-accuracy", type=float, default=0.9)
    parser.add_argument("--compile", action="store_true", default=False,
                        help="train torch.compile(model) (inductor)")
    args = parser.parse_args()
    args.cuda = not args.no_cuda and torch.cuda.is_available()
    return args


class Net(nn.Module):
    """Two 3x3 conv blocks (8x8 -> 4x4 -> 2x2) and two dense layers."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, kernel_size=3, padding=1)
        self.dropout = nn.Dropout(0.25)
        self.fc1 = nn.Linear(32 * 2 * 2, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = self.dropout(torch.flatten(x, 1))
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def digits_datasets(seed):
    """(train, test) TensorDatasets of the digits images, normalised."""
    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    images = (images - 0.3) / 0.4    # roughly zero mean, unit variance
    labels = torch.tensor(digits.target, dtype=torch.int64)
    idx_train, idx_test = train_test_split(list(range(len(labels))), test_size=0.2,
                                           random_state=seed, stratify=digits.target)
    return (torch.utils.data.TensorDataset(images[idx_train], labels[idx_train]),
            torch.utils.data.TensorDataset(images[idx_test], labels[idx_test]))


def metric_average(value, name):
    """The average of a per-rank scalar over all ranks."""
    return hvd.allreduce(torch.tensor(float(value)), name=name).item()


def parameters_digest(module):
    """A short hash of the module's state (names and bytes): equal on every
    rank while data parallelism keeps the replicas identical."""
    digest = hashlib.sha256()
    for name, tensor in module.state_dict().items():
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


def checkpoint_path(args, epoch):
    return os.path.join(args.checkpoint_dir, f"checkpoint-{epoch}.pt")


def find_resume_epoch(args):
    """Rank 0 looks for the newest checkpoint; every rank gets its epoch (0: none)."""
    resume_from = 0
    if hvd.rank() == 0 and args.checkpoint_dir:
        for epoch in range(args.epochs, 0, -1):
            if os.path.exists(checkpoint_path(args, epoch)):
                resume_from = epoch
                break
    return hvd.broadcast_object(resume_from, root_rank=0, name="resume_from_epoch")


def train_epoch(epoch, model, optimizer, loader, sampler, args):
    model.train()
    sampler.set_epoch(epoch)    # a different shuffle per epoch, the same on every rank
    total, batches = 0.0, 0
    for data, target in loader:
        if args.cuda:
            data, target = data.cuda(), target.cuda()
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        total += loss.item()
        batches += 1
    return metric_average(total / max(batches, 1), "avg_train_loss")


def evaluate(model, loader, sampler, args):
    model.eval()
    loss, correct = 0.0, 0.0
    with torch.no_grad():
        for data, target in loader:
            if args.cuda:
                data, target = data.cuda(), target.cuda()
            output = model(data)
            loss += F.nll_loss(output, target, reduction="sum").item()
            correct += output.argmax(dim=1).eq(target).sum().item()
    n = max(len(sampler), 1)
    return metric_average(loss / n, "avg_loss"), metric_average(correct / n, "avg_accuracy")


def main():
    args = parse_args()
    hvd.init()
    torch.manual_seed(args.seed)
    if args.cuda:
        torch.cuda.set_device(hvd.local_rank())    # one GPU per process
        torch.cuda.manual_seed(args.seed)
    else:
        torch.set_num_threads(1)                   # ranks share the host's cores

    train_set, test_set = digits_datasets(args.seed)
    train_sampler = torch.utils.data.distributed.DistributedSampler(
        train_set, num_replicas=hvd.size(), rank=hvd.rank())
    test_sampler = torch.utils.data.distributed.DistributedSampler(
        test_set, num_replicas=hvd.size(), rank=hvd.rank(), shuffle=False)
    train_loader = torch.utils.data.DataLoader(train_set, batch_size=args.batch_size,
                                               sampler=train_sampler)
    test_loader = torch.utils.data.DataLoader(test_set, batch_size=args.test_batch_size,
                                              sampler=test_sampler)

    net = Net()
    if args.cuda:
        net.cuda()
    model = net
    if args.compile:
        # Dropout masks from torch's generator, as in eager: a compiled run
        # follows the eager run of the same seed (inductor's own RNG is faster).
        torch._inductor.config.fallback_random = True
        model = torch.compile(net)
    # Averaging gradients over N ranks makes each step N times larger in batch,
    # so the learning rate grows with it (Adasum adapts by itself).
    lr_scaler = 1 if args.use_adasum else hvd.size()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * lr_scaler, momentum=args.momentum)

    resume_from = find_resume_epoch(args)
    if resume_from > 0 and hvd.rank() == 0:
        state = torch.load(checkpoint_path(args, resume_from), map_location="cpu")
        net.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        print(f"resumed from epoch {resume_from} ({checkpoint_path(args, resume_from)})", flush=True)

    # Every rank starts from rank 0's weights and optimizer state (initial or restored).
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(
        optimizer, named_parameters=model.named_parameters(), compression=compression,
        op=hvd.Adasum if args.use_adasum else hvd.Average,
        gradient_predivide_factor=args.gradient_predivide_factor)

    losses = []
    for epoch in range(resume_from + 1, args.epochs + 1):
        losses.append(train_epoch(epoch, model, optimizer, train_loader, train_sampler, args))
        test_loss, test_acc = evaluate(model, test_loader, test_sampler, args)
        if hvd.rank() == 0:
            print(f"epoch {epoch}/{args.epochs}: train loss {losses[-1]:.4f}  "
                  f"test loss {test_loss:.4f}  test accuracy {100 * test_acc:.2f}%", flush=True)
            if args.checkpoint_dir:
                os.makedirs(args.checkpoint_dir, exist_ok=True)
                torch.save({"model": net.state_dict(), "optimizer": optimizer.state_dict(),
                            "epoch": epoch}, checkpoint_path(args, epoch))

    test_loss, test_acc = evaluate(model, test_loader, test_sampler, args)
    digests = hvd.allgather_object(parameters_digest(net), name="parameters_digest")
    in_sync = len(set(digests)) == 1
    ok = (test_acc > args.min_accuracy and (len(losses) < 2 or losses[-1] < losses[0])
          and in_sync)
    if hvd.rank() == 0:
        print(f"final test accuracy {100 * test_acc:.2f}% on {len(test_set)} images "
              f"with {hvd.size()} processes", flush=True)
        print(f"parameters {'identical' if in_sync else 'DIFFER'} on all {hvd.size()} ranks "
              f"(digests {sorted(set(digests))})", flush=True)
        if not ok:
            print(f"FAILED: accuracy must exceed {100 * args.min_accuracy:.0f}%, the training "
                  f"loss must fall (epoch losses: {[round(x, 4) for x in losses]}) and every "
                  f"rank must end with the same parameters", flush=True)
    hvd.shutdown()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
