"""The DDP twin of upstream Horovod's examples/pytorch/pytorch_synthetic_benchmark.py
(started by benchmarks/synthetic.py through `torchrun`, as DDP users start it).

Same flags, model (torchvision, random init), fixed random batch, loss,
optimizer (SGD, lr 0.01 x world size), warm-up and timing loop as upstream's
script, and the same output lines, so the driver parses both alike. The
model is wrapped in DistributedDataParallel (gloo on CPU, nccl on CUDA) and
rank 0 broadcasts nothing else: DDP broadcasts the parameters when it wraps.

--no-communication: the "ideal" row: no process group, every process trains
alone on its own batch; each prints its own rate ("Rank <i> img/sec per
<device>: ..."), the driver sums them.
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
import torch.optim as optim
from torchvision import models

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from twin_common import parse_args, report, timed_iterations  # noqa: E402

args = parse_args(__doc__.splitlines()[0], "resnet50")
args.cuda = not args.no_cuda and torch.cuda.is_available()

rank = int(os.environ.get("RANK", "0"))
local_rank = int(os.environ.get("LOCAL_RANK", "0"))
size = int(os.environ.get("WORLD_SIZE", "1"))
if args.cuda:
    torch.cuda.set_device(local_rank)
if not args.no_communication:
    dist.init_process_group("nccl" if args.cuda else "gloo")

model = getattr(models, args.model)()
if args.cuda:
    model.cuda()
if not args.no_communication:
    model = torch.nn.parallel.DistributedDataParallel(
        model, device_ids=[local_rank] if args.cuda else None)
optimizer = optim.SGD(model.parameters(), lr=0.01 * size)

data = torch.randn(args.batch_size, 3, 224, 224)
target = torch.LongTensor(args.batch_size).random_() % 1000
if args.cuda:
    data, target = data.cuda(), target.cuda()


def benchmark_step():
    optimizer.zero_grad()
    output = model(data)
    loss = F.cross_entropy(output, target)
    loss.backward()
    optimizer.step()
    if args.cuda:
        torch.cuda.synchronize()


def log(s):
    if rank == 0:
        print(s, flush=True)


device = "GPU" if args.cuda else "CPU"
log(f"Model: {args.model}")
log(f"Batch size: {args.batch_size}")
log(f"Number of {device}s: {size}")
img_secs = timed_iterations(benchmark_step, args, device, log)
report(img_secs, rank, size, device, args.no_communication)
if not args.no_communication:
    dist.destroy_process_group()
