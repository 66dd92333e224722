"""horovod_accel allreduce worker; started by benchmarks/allreduce.py via
`python -m horovod_accel.runner.launch` (horovodrun).

Written against upstream Horovod's torch API. Measures hvd.allreduce_(t,
op=hvd.Sum, name=...) (in place, synchronous) on float32 CPU tensors; the
async batch is hvd.allreduce_async_(t, name="batch.<i>", op=hvd.Sum) x count
(distinct names, reused every repetition so the response cache can hit), then
hvd.synchronize(handle) on every handle.
"""
import torch

import horovod_accel.torch as hvd

import bench_common


class HvdaBackend:
    name = "horovod_accel"

    def __init__(self):
        torch.set_num_threads(1)
        hvd.init()
        self.rank = hvd.rank()
        self.size = hvd.size()
        # One fixed name per buffer length: the same tensor is reduced over and
        # over, as a training loop would, and the response cache sees it.
        self._names = {}

    def barrier(self):
        hvd.barrier()

    def make_buffer(self, nelems, fill):
        return torch.full((nelems,), fill, dtype=torch.float32)

    def allreduce_inplace(self, buf):
        name = self._names.setdefault(buf.numel(), f"bench.{buf.numel()}")
        hvd.allreduce_(buf, op=hvd.Sum, name=name)

    def async_batch(self, bufs):
        handles = [hvd.allreduce_async_(b, name=f"batch.{i}", op=hvd.Sum)
                   for i, b in enumerate(bufs)]
        for h in handles:
            hvd.synchronize(h)

    def max_over_ranks(self, values):
        t = torch.tensor(values, dtype=torch.float64)
        return hvd.allreduce(t, op=hvd.Max, name=f"bench.times.{len(values)}").tolist()

    def to_list(self, buf):
        return buf.tolist()

    def finish(self):
        hvd.barrier()
        hvd.shutdown()


if __name__ == "__main__":
    bench_common.main(HvdaBackend)
