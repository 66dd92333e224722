"""One rank of a training-throughput job (started by benchmarks/train_step.py).

--mode local: plain torch, no communication (the "1 proc" and "ideal" rows;
              for "ideal" the driver starts several of these at once).
--mode hvda:  horovod_accel DistributedOptimizer (started by horovodrun).
--mode ddp:   torch DistributedDataParallel over gloo (started by torchrun).

Every mode runs the same step (zero_grad, forward, cross-entropy, backward,
SGD step) on a fixed random batch, with torch.set_num_threads(1). Each
iteration is timed with perf_counter on every rank; after the loop the
per-iteration times are MAX-reduced over ranks (untimed) and rank 0 writes
{"iter_s": [...], ...} as JSON to --out.

--compile: the model goes through torch.compile (default inductor backend)
after the mode's wrapping: torch.compile(model) for local and hvda (the
DistributedOptimizer hooks the same parameters), torch.compile(DDP(model))
for ddp (PyTorch's recommended order: dynamo's DDPOptimizer splits the graph
at DDP's bucket boundaries). Compilation happens in the first warm-up step;
every warm-up step's time goes to "warmup_s" and dynamo's graph count before
and after the timed loop to "graphs" (0 graphs: nothing was compiled; a
recompile during the loop would show as a difference). In every mode the
model is first put under UserModule (see there), so that DDP's compiles too.

--overlap-report (hvda): after the timed loop, overlap_report.py measures
when gradients become ready within loss.backward() and how much of the
allreduce time the step hides; rank-averaged medians go to "overlap".
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import build_model  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=["local", "hvda", "ddp"], required=True)
    p.add_argument("--model", choices=["mlp", "cnn"], required=True)
    p.add_argument("--batch-size", type=int, required=True)
    p.add_argument("--iters", type=int, required=True)
    p.add_argument("--warmup", type=int, required=True)
    p.add_argument("--out", required=True, help="JSON result path (rank 0 / local process)")
    p.add_argument("--bucket-mb", type=float, default=None,
                   help="hvda: DistributedOptimizer bucket cap (default: the library's)")
    p.add_argument("--compile", action="store_true", help="torch.compile the (wrapped) model")
    p.add_argument("--compile-backend", default="inductor",
                   help="--compile, hvda mode: torch.compile's backend (e.g. 'horovod': the graph "
                        "split at bucket boundaries so allreduces overlap the backward)")
    p.add_argument("--overlap-report", action="store_true",
                   help="hvda: measure gradient readiness and hidden communication after the loop")
    a = p.parse_args()
    if a.overlap_report and a.mode != "hvda":
        p.error("--overlap-report applies to --mode hvda only")
    return a


def dynamo_graphs():
    """Graphs dynamo has compiled in this process so far (0 without --compile)."""
    from torch._dynamo.utils import counters
    return counters["stats"]["unique_graphs"]


class UserModule(torch.nn.Module):
    """--compile: the model under a module defined outside torch.nn. In
    torch.compile(DDP(model)) dynamo graph-breaks in DDP's forward and then
    skips a top-level frame from torch.nn, so an nn.Sequential (the mlp) under
    DDP was not compiled at all (torch 2.13; 0 graphs). Used for every mode
    alike, so the compiled graphs are the same."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)


class Local:
    rank, size = 0, 1

    def wrap(self, model, opt):
        return model, opt

    def max_over_ranks(self, times):
        return times

    def finish(self):
        pass


class Hvda:
    def __init__(self, bucket_mb):
        import horovod_accel.torch as hvd
        self.hvd = hvd
        hvd.init()
        self.rank, self.size = hvd.rank(), hvd.size()
        if bucket_mb is not None:
            from horovod_accel.common import buckets as optimizer_buckets
            optimizer_buckets.DEFAULT_BUCKET_BYTES = int(bucket_mb * 2**20)

    def wrap(self, model, opt):
        hvd = self.hvd
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
        return model, opt

    def max_over_ranks(self, times):
        t = torch.tensor(times, dtype=torch.float64)
        return self.hvd.allreduce(t, op=self.hvd.Max, name="iter_times").tolist()

    def finish(self):
        self.hvd.shutdown()


class Ddp:
    def __init__(self):
        import torch.distributed as dist
        self.dist = dist
        dist.init_process_group("gloo")
        self.rank, self.size = dist.get_rank(), dist.get_world_size()

    def wrap(self, model, opt):
        from torch.nn.parallel import DistributedDataParallel
        return DistributedDataParallel(model), opt   # broadcasts rank 0's parameters

    def max_over_ranks(self, times):
        t = torch.tensor(times, dtype=torch.float64)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX)
        return t.tolist()

    def finish(self):
        self.dist.destroy_process_group()


def main():
    a = parse_args()
    torch.set_num_threads(1)
    backend = {"local": Local, "hvda": lambda: Hvda(a.bucket_mb), "ddp": Ddp}[a.mode]()
    torch.manual_seed(0)
    model, sample_shape, classes = build_model(a.model)
    if a.compile:
        model = UserModule(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    recorder = None
    if a.overlap_report:
        from overlap_report import ReadyRecorder
        recorder = ReadyRecorder(model)     # before the optimizer's hooks: fires first
    model, opt = backend.wrap(model, opt)
    if a.compile:
        model = torch.compile(model, backend=a.compile_backend if a.mode == "hvda" else "inductor")
    g = torch.Generator().manual_seed(1 + backend.rank)
    data = torch.randn(a.batch_size, *sample_shape, generator=g)
    target = torch.randint(0, classes, (a.batch_size,), generator=g)

    def step():
        opt.zero_grad()
        F.cross_entropy(model(data), target).backward()
        opt.step()

    warmup = []
    for _ in range(a.warmup):
        t0 = time.perf_counter()
        step()
        warmup.append(time.perf_counter() - t0)
    graphs = [dynamo_graphs()] if a.compile else None
    times = []
    for _ in range(a.iters):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    if a.compile:
        graphs.append(dynamo_graphs())
    times = backend.max_over_ranks(times)
    overlap = None
    if recorder is not None:
        from overlap_report import measure
        overlap = measure(model, opt, data, target, recorder, backend.hvd, a.iters)
    if backend.rank == 0:
        grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
        with open(a.out, "w") as f:
            json.dump({"iter_s": times, "size": backend.size, "batch_size": a.batch_size,
                       "grad_bytes": grad_bytes, "mode": a.mode, "model": a.model,
                       "compiled": a.compile, "warmup_s": warmup, "graphs": graphs,
                       "overlap": overlap}, f)
    backend.finish()


if __name__ == "__main__":
    main()
