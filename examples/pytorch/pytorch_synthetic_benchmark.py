"""Synthetic training benchmark in the style of Horovod's
pytorch_synthetic_benchmark.py: random data, a fixed model, samples/s per
rank and in total (`import horovod.torch as hvd`).

    horovodrun -np 2 python examples/pytorch/pytorch_synthetic_benchmark.py
    horovodrun -np 2 python examples/pytorch/pytorch_synthetic_benchmark.py --fp16-allreduce
    horovodrun -np 2 python examples/pytorch/pytorch_synthetic_benchmark.py --model cnn

Models: `mlp` (default; 1024-512-512-10, ~3 MB of gradients), `cnn` (a small
convnet on 3x32x32 images), or any torchvision model name (e.g. resnet50)
when torchvision is installed. On CPU each rank uses --num-threads threads
(default 1, so ranks sharing a host do not oversubscribe its cores).
"""
import argparse
import timeit

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import horovod.torch as hvd


def parse_args():
    parser = argparse.ArgumentParser(description="PyTorch synthetic benchmark",
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--fp16-allreduce", action="store_true", default=False,
                        help="use fp16 compression during allreduce")
    parser.add_argument("--model", default="mlp", help="mlp, cnn or a torchvision model name")
    parser.add_argument("--batch-size", type=int, default=32, help="input batch size per rank")
    parser.add_argument("--num-warmup-batches", type=int, default=5,
                        help="number of warm-up batches that don't count towards the benchmark")
    parser.add_argument("--num-batches-per-iter", type=int, default=10,
                        help="number of batches per benchmark iteration")
    parser.add_argument("--num-iters", type=int, default=5, help="number of benchmark iterations")
    parser.add_argument("--num-threads", type=int, default=1, help="torch threads per rank (CPU)")
    parser.add_argument("--no-cuda", action="store_true", default=False)
    parser.add_argument("--use-adasum", action="store_true", default=False)
    args = parser.parse_args()
    args.cuda = not args.no_cuda and torch.cuda.is_available()
    return args


class SmallCNN(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.conv3 = nn.Conv2d(64, 128, 3, padding=1)
        self.fc = nn.Linear(128 * 4 * 4, classes)

    def forward(self, x):
        for conv in (self.conv1, self.conv2, self.conv3):
            x = F.max_pool2d(F.relu(conv(x)), 2)
        return self.fc(torch.flatten(x, 1))


def build_model(name):
    """(model, input shape of one sample, number of classes)."""
    if name == "mlp":
        return nn.Sequential(nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                             nn.Linear(512, 10)), (1024,), 10
    if name == "cnn":
        return SmallCNN(), (3, 32, 32), 10
    try:
        from torchvision import models
    except ImportError:
        raise SystemExit(f"--model {name}: only mlp and cnn are built in; torchvision models "
                         f"need torchvision installed") from None
    return getattr(models, name)(), (3, 224, 224), 1000


def main():
    args = parse_args()
    hvd.init()
    if args.cuda:
        torch.cuda.set_device(hvd.local_rank())
    else:
        torch.set_num_threads(args.num_threads)

    model, sample_shape, classes = build_model(args.model)
    if args.cuda:
        model.cuda()
    lr_scaler = 1 if args.use_adasum else hvd.size()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * lr_scaler)
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=compression,
                                         op=hvd.Adasum if args.use_adasum else hvd.Average)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    data = torch.randn(args.batch_size, *sample_shape)
    target = torch.randint(0, classes, (args.batch_size,))
    if args.cuda:
        data, target = data.cuda(), target.cuda()

    def benchmark_step():
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()

    def log(s):
        if hvd.rank() == 0:
            print(s, flush=True)

    device = "GPU" if args.cuda else "CPU"
    n_grad_mb = sum(p.numel() * p.element_size() for p in model.parameters()) / 2**20
    log(f"Model: {args.model} ({n_grad_mb:.1f} MiB of gradients)")
    log(f"Batch size: {args.batch_size}")
    log(f"Number of {device}s: {hvd.size()}")
    log("Running warmup...")
    timeit.timeit(benchmark_step, number=args.num_warmup_batches)

    log("Running benchmark...")
    rates = []
    for i in range(args.num_iters):
        t = timeit.timeit(benchmark_step, number=args.num_batches_per_iter)
        rate = args.batch_size * args.num_batches_per_iter / t
        log(f"Iter #{i}: {rate:.1f} samples/sec per {device}")
        rates.append(rate)

    mean, conf = np.mean(rates), 1.96 * np.std(rates)
    log(f"Samples/sec per {device}: {mean:.1f} +-{conf:.1f}")
    log(f"Total samples/sec on {hvd.size()} {device}(s): {hvd.size() * mean:.1f} "
        f"+-{hvd.size() * conf:.1f}")


if __name__ == "__main__":
    main()
