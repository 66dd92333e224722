"""A 2-rank torch training job for the installed-wheel tests
(test_wheels_in_container.py): a small regression MLP, each rank on its own
shard, hvd.DistributedOptimizer over gradient hooks. Checks that the loss
falls and that the ranks end with identical parameters; prints
TORCH-WHEEL-JOB-OK with where horovod_accel's core was loaded from."""
import sys

import torch

import horovod.torch as hvd
from horovod_accel import _core

hvd.init()
rank, size = hvd.rank(), hvd.size()
torch.manual_seed(1234)
x = torch.randn(512, 16)
y = x @ torch.randn(16, 1) + 0.1 * torch.randn(512, 1)
x, y = x[rank::size], y[rank::size]

torch.manual_seed(rank)  # parameters differ per rank until the broadcast
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05),
                               named_parameters=model.named_parameters())
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
hvd.broadcast_optimizer_state(opt, root_rank=0)

losses = []
for step in range(60):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    losses.append(hvd.allreduce(loss.detach(), op=hvd.Average, name="loss").item())
if not losses[-1] < 0.2 * losses[0]:
    sys.exit(f"rank {rank}: the loss did not fall: {losses[0]:.4g} -> {losses[-1]:.4g}")
flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
every = hvd.allgather(flat.unsqueeze(0), name="params")
if not torch.equal(every[0], every[-1]):
    sys.exit(f"rank {rank}: the ranks' parameters differ after training")
print(f"TORCH-WHEEL-JOB-OK rank={rank} size={size} first={losses[0]:.4g} last={losses[-1]:.4g} "
      f"core={_core.__file__}", flush=True)
hvd.shutdown()
