"""A small data-parallel training job for test_autotune.py (every rank runs it).

Trains a float32 MLP classifier with DistributedOptimizer for STEPS steps on
synthetic data (the same global batches on every rank for the same seed; each
rank takes its shard), one allreduce per parameter so that the core's fusion
has something to decide. Prints, per rank, one line:
    AUTOTUNE-RESULT loss=<final loss> accuracy=<held-out accuracy> params=<sha256>
where params is the hash of the final parameters' bytes: runs with and
without autotune must print the same line (fusion never changes a result).
"""
import hashlib
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import horovod.torch as hvd
from horovod_accel.common import buckets

FEATURES, CLASSES, PER_RANK = 32, 8, 16


def main():
    steps = int(sys.argv[1])
    hvd.init()
    torch.manual_seed(0)
    buckets.DEFAULT_BUCKET_BYTES = 1  # one op per parameter: the core fuses them per cycle
    model = nn.Sequential(nn.Linear(FEATURES, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh(),
                          nn.Linear(256, 128), nn.Tanh(), nn.Linear(128, CLASSES))
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                                   named_parameters=model.named_parameters())
    g = torch.Generator().manual_seed(1234)
    teacher = torch.randn(FEATURES, CLASSES, generator=g)
    n, r = hvd.size(), hvd.rank()
    loss = torch.tensor(0.0)
    for _ in range(steps):
        x = torch.randn(PER_RANK * n, FEATURES, generator=g)
        y = (x @ teacher).argmax(1)
        xs, ys = x[r * PER_RANK:(r + 1) * PER_RANK], y[r * PER_RANK:(r + 1) * PER_RANK]
        opt.zero_grad()
        loss = F.cross_entropy(model(xs), ys)
        loss.backward()
        opt.step()
    x = torch.randn(2000, FEATURES, generator=g)
    with torch.no_grad():
        accuracy = (model(x).argmax(1) == (x @ teacher).argmax(1)).float().mean().item()
    digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters()))
    print(f"AUTOTUNE-RESULT loss={loss.item():.6f} accuracy={accuracy:.4f} "
          f"params={digest.hexdigest()}", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
