"""Elastic data-parallel training of a small CNN on handwritten digits
(scikit-learn's 8x8 digits, as examples/pytorch/pytorch_mnist.py): the job
survives lost workers and hosts, and grows when hosts are added.

    horovodrun -np 2 --min-np 1 --max-np 4 --host-discovery-script ./discover.sh \\
        python examples/elastic/pytorch_mnist_elastic.py
    horovodrun -np 2 --min-np 1 -H localhost:1,127.0.0.1:1 \\
        python examples/elastic/pytorch_mnist_elastic.py      # fault tolerance, fixed hosts

State: model, optimizer and an ElasticSampler in a TorchState, committed
every --batches-per-commit batches. After a failure the survivors return to
the last commit; the sampler re-shards the samples not yet processed this
epoch over the new number of workers, and the learning rate follows
hvd.size() (a reset callback). --fail-at EPOCH:BATCH makes the worker that
started as the last rank SIGKILL itself once at that point (a marker file
in --fail-marker-dir keeps it to one failure per job), to try recovery.

Exits non-zero if the final test accuracy is not above --min-accuracy.
"""
import argparse
import os
import signal
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import horovod.torch as hvd


def parse_args():
    p = argparse.ArgumentParser(description="Elastic PyTorch digits example")
    p.add_argument("--batch-size", type=int, default=32, help="input batch size per worker")
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--lr", type=float, default=0.05, help="learning rate for one worker")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--batches-per-commit", type=int, default=4)
    p.add_argument("--fail-at", default=None, help="EPOCH:BATCH where one worker kills itself")
    p.add_argument("--fail-marker-dir", default=None,
                   help="directory of the marker that limits --fail-at to one failure")
    p.add_argument("--min-accuracy", type=float, default=0.9)
    return p.parse_args()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, kernel_size=3, padding=1)
        self.fc1 = nn.Linear(32 * 2 * 2, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return F.log_softmax(self.fc2(x), dim=1)


def digits_datasets(seed):
    digits = load_digits()
    images = (torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0 - 0.3) / 0.4
    labels = torch.tensor(digits.target, dtype=torch.int64)
    train, test = train_test_split(list(range(len(labels))), test_size=0.2, random_state=seed,
                                   stratify=digits.target)
    return (torch.utils.data.TensorDataset(images[train], labels[train]),
            torch.utils.data.TensorDataset(images[test], labels[test]))


def maybe_fail(args, epoch, batch):
    """SIGKILLs the worker that started as the last rank, once per job."""
    if not args.fail_at or not args.fail_marker_dir:
        return
    fail_epoch, fail_batch = map(int, args.fail_at.split(":"))
    start_rank = int(os.environ.get("HOROVOD_RANK", "0"))
    start_size = int(os.environ.get("HOROVOD_SIZE", "1"))
    if (epoch, batch) != (fail_epoch, fail_batch) or start_rank != start_size - 1:
        return
    marker = os.path.join(args.fail_marker_dir, "failed-once")
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return
    print(f"worker started as rank {start_rank} kills itself at epoch {epoch} batch {batch}",
          flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


def evaluate(model, dataset):
    model.eval()
    with torch.no_grad():
        x, y = dataset.tensors
        correct = (model(x).argmax(dim=1) == y).sum().item()
    return correct / len(y)


def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    hvd.init()
    train_set, test_set = digits_datasets(args.seed)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size(),
                                momentum=args.momentum)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    sampler = hvd.elastic.ElasticSampler(train_set, shuffle=True, seed=args.seed)
    loader = torch.utils.data.DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)

    def on_reset():
        for group in optimizer.param_groups:
            group["lr"] = args.lr * hvd.size()

    state = hvd.elastic.TorchState(model=model, optimizer=optimizer, sampler=sampler,
                                   epoch=0, batch=0, losses=[])
    state.register_reset_callbacks([on_reset])

    @hvd.elastic.run
    def train(state):
        while state.epoch < args.epochs:
            model.train()
            total, count = 0.0, 0
            # The loader yields what is left of this epoch for this worker; its
            # batch index counts from the sampler's last re-sharding (a reset).
            for batch_idx, (data, target) in enumerate(loader):
                maybe_fail(args, state.epoch, state.batch)
                optimizer.zero_grad()
                loss = F.nll_loss(model(data), target)
                loss.backward()
                optimizer.step()
                total, count = total + loss.item(), count + 1
                state.sampler.record_batch(batch_idx, args.batch_size)
                state.batch += 1
                if state.batch % args.batches_per_commit == 0:
                    state.commit()
            loss = hvd.allreduce(torch.tensor(total / max(count, 1)), name="epoch_loss").item()
            if hvd.rank() == 0:
                print(f"epoch {state.epoch}: {hvd.size()} workers, train loss {loss:.4f}",
                      flush=True)
            state.losses.append(loss)
            state.epoch += 1
            state.batch = 0
            # At the end of an epoch: called at the start, a reset in the
            # middle of an epoch would forget what was processed.
            state.sampler.set_epoch(state.epoch)
            state.commit()
        return state.losses

    losses = train(state)
    accuracy = evaluate(model, test_set)
    if hvd.rank() == 0:
        print(f"final: {hvd.size()} workers, test accuracy {accuracy:.4f}", flush=True)
    if accuracy <= args.min_accuracy or not losses[-1] < losses[0]:
        print(f"FAILED: accuracy {accuracy:.4f} (need > {args.min_accuracy}), losses {losses}",
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
