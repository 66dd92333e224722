"""torch.distributed (gloo) allreduce worker; started by benchmarks/allreduce.py via torchrun.

Measures dist.all_reduce(t, op=SUM) in place on float32 CPU tensors; the async
batch is dist.all_reduce(async_op=True) x count, then wait() on every work.
"""
import torch
import torch.distributed as dist

import bench_common


class TorchGlooBackend:
    name = "torch_gloo"

    def __init__(self):
        torch.set_num_threads(1)
        dist.init_process_group(backend="gloo")  # rank/size/master from torchrun's env
        self.rank = dist.get_rank()
        self.size = dist.get_world_size()

    def barrier(self):
        dist.barrier()

    def make_buffer(self, nelems, fill):
        return torch.full((nelems,), fill, dtype=torch.float32)

    def allreduce_inplace(self, buf):
        dist.all_reduce(buf, op=dist.ReduceOp.SUM)

    def async_batch(self, bufs):
        works = [dist.all_reduce(b, op=dist.ReduceOp.SUM, async_op=True) for b in bufs]
        for w in works:
            w.wait()

    def max_over_ranks(self, values):
        t = torch.tensor(values, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.tolist()

    def to_list(self, buf):
        return buf.tolist()

    def finish(self):
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    bench_common.main(TorchGlooBackend)
