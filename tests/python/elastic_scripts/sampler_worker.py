"""An elastic worker that trains through a TorchState holding an
ElasticSampler, for the exact-accounting test under real failures and host
changes (tests/python/test_elastic_launcher.py).

Env as scheduled_worker.py (ELASTIC_DIR, ELASTIC_SCHEDULE; its events fire
at (epoch, batch) with batch = the number of batches committed this epoch),
plus SAMPLER_DATASET (the dataset length) and SAMPLER_BATCH (batch size).
The state is committed after every batch; after each successful commit a
worker logs the dataset indices it recorded for that batch
({"w", "epoch", "committed": [...]}), so the logs hold exactly the work
that no reset rolled back. The test checks that, per epoch, every index was
committed exactly once over all workers and rounds.
"""
import json
import os

import torch
import torch.utils.data

import horovod.torch as hvd
from _schedule import SCHED, WID, log
from scheduled_worker import handle_events

N = int(os.environ["SAMPLER_DATASET"])
BATCH = int(os.environ["SAMPLER_BATCH"])


def main():
    hvd.init()
    dataset = torch.utils.data.TensorDataset(torch.arange(N, dtype=torch.float32).unsqueeze(1))
    sampler = hvd.elastic.ElasticSampler(dataset, shuffle=True, seed=7)
    loader = torch.utils.data.DataLoader(dataset, batch_size=BATCH, sampler=sampler)
    model = torch.nn.Linear(1, 1)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1e-4),
                                         named_parameters=model.named_parameters())
    state = hvd.elastic.TorchState(model=model, optimizer=optimizer, sampler=sampler,
                                   epoch=0, batch=0)

    @hvd.elastic.run
    def train(state):
        while state.epoch < SCHED["epochs"]:
            for batch_idx, (x,) in enumerate(loader):
                handle_events(state)
                optimizer.zero_grad()
                model(x).sum().backward()
                optimizer.step()
                before = set(state.sampler.processed_indices)
                state.sampler.record_batch(batch_idx, BATCH)
                mine = sorted(state.sampler.processed_indices - before)
                state.batch += 1
                state.commit()
                log(w=WID, epoch=state.epoch, size=hvd.size(), committed=mine)
            state.epoch += 1
            state.batch = 0
            state.sampler.set_epoch(state.epoch)
            state.commit()
        return hvd.size()

    size = train(state)
    if hvd.rank() == 0:
        print(f"DONE size={size} " + json.dumps({"epochs": state.epoch}), flush=True)


if __name__ == "__main__":
    main()
