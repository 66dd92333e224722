"""Elastic training for the emulated elastic MPIJob (tests/python/
test_kubernetes.py): the TRAIN_SCRIPT that run.sh starts on every worker.

A small MLP on a fixed synthetic classification task, in a
hvd.elastic.TorchState with an ElasticSampler, committed every epoch.
Rank 0 prints "epoch E: N workers, loss L" after each epoch, so the test
sees the job shrink and grow. The job runs until the file named by
ELASTIC_STOP_FILE exists (checked at the end of each epoch, the decision
max-allreduced, so all ranks stop after the same epoch), then rank 0
prints "final: N workers, loss FIRST -> LAST"; exits 1 if the loss did not
fall, 3 if ELASTIC_MAX_EPOCHS (default 2000) passed without the stop file.
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data

import horovod.torch as hvd


def dataset(n=1024, features=16, classes=4):
    g = torch.Generator().manual_seed(0)
    centers = torch.randn(classes, features, generator=g) * 1.5
    labels = torch.randint(0, classes, (n,), generator=g)
    return torch.utils.data.TensorDataset(centers[labels] + torch.randn(n, features, generator=g),
                                          labels)


def main():
    stop_file = os.environ["ELASTIC_STOP_FILE"]
    max_epochs = int(os.environ.get("ELASTIC_MAX_EPOCHS", "2000"))
    torch.manual_seed(0)
    torch.set_num_threads(1)
    hvd.init()
    data = dataset()
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.02),
                                         named_parameters=model.named_parameters())
    sampler = hvd.elastic.ElasticSampler(data, shuffle=True, seed=0)
    loader = torch.utils.data.DataLoader(data, batch_size=32, sampler=sampler)
    state = hvd.elastic.TorchState(model=model, optimizer=optimizer, sampler=sampler,
                                   epoch=0, losses=[])

    @hvd.elastic.run
    def train(state):
        while state.epoch < max_epochs:
            total, count = 0.0, 0
            for batch_idx, (x, y) in enumerate(loader):
                optimizer.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()
                total, count = total + loss.item(), count + 1
                state.sampler.record_batch(batch_idx, loader.batch_size)
            loss = hvd.allreduce(torch.tensor(total / max(count, 1)), name="epoch_loss").item()
            if hvd.rank() == 0:
                print(f"epoch {state.epoch}: {hvd.size()} workers, loss {loss:.4f}", flush=True)
            state.losses.append(loss)
            state.epoch += 1
            state.sampler.set_epoch(state.epoch)
            stop = hvd.allreduce(torch.tensor(int(os.path.exists(stop_file))), op=hvd.Max,
                                 name="stop").item()
            state.commit()
            if stop:
                return state.losses
        return None

    losses = train(state)
    if losses is None:
        print(f"no {stop_file} after {max_epochs} epochs", file=sys.stderr)
        sys.exit(3)
    if hvd.rank() == 0:
        print(f"final: {hvd.size()} workers, loss {losses[0]:.4f} -> {losses[-1]:.4f}",
              flush=True)
    if not losses[-1] < losses[0]:
        sys.exit(1)


if __name__ == "__main__":
    main()
