"""Device overhead worker (started by benchmarks/device_overhead.py under
scripts/emulated_gcu.sh through horovodrun): in one job, times

* hvda: hvd.allreduce_(t, op=hvd.Sum) on torch tensors on the 'gcu' device
  (synchronous: enqueue, negotiation, the GCU plugin's ECCL allreduce on the
  communication stream, completion by event), and
* direct: the same ECCL allreduce called straight through ctypes on the same
  emulated libraries (ecclAllReduce on a stream + topsStreamSynchronize),

alternating blocks of the two per size so both see the same machine state.
Per iteration: max over ranks; per block: median. Rank 0 writes JSON to --out.
"""
import argparse
import ctypes
import json
import os
import statistics
import time

import torch

import horovod_accel.torch as hvd

FLOAT32, SUM, NON_BLOCKING = 7, 0, 1  # ECCL dtype/op numbering, topsStreamNonBlocking


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def check(rc, what):
    if rc != 0:
        raise RuntimeError(f"{what} failed with {rc}")


class DirectEccl:
    """The emulated ECCL called directly (what a hand-written ECCL user gets)."""

    def __init__(self, device, rank, size):
        self.rt = ctypes.CDLL(os.environ["HOROVOD_GCU_RUNTIME_LIB"])
        self.ccl = ctypes.CDLL(os.environ["HOROVOD_ECCL_LIB"])
        check(self.rt.topsSetDevice(device), "topsSetDevice")
        uid = UniqueId()
        if rank == 0:
            check(self.ccl.ecclGetUniqueId(ctypes.byref(uid)), "ecclGetUniqueId")
        # All 128 bytes: the c_char array's value would stop at the first NUL.
        raw = hvd.broadcast_object(ctypes.string_at(ctypes.addressof(uid), 128) if rank == 0
                                   else None, root_rank=0, name="bench.uid")
        ctypes.memmove(ctypes.addressof(uid), raw, 128)
        self.comm = ctypes.c_void_p()
        check(self.ccl.ecclCommInitRank(ctypes.byref(self.comm), size, uid, rank), "ecclCommInitRank")
        self.stream = ctypes.c_void_p()
        check(self.rt.topsStreamCreateWithFlags(ctypes.byref(self.stream), NON_BLOCKING),
              "topsStreamCreateWithFlags")
        self.ccl.ecclAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                           ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                                           ctypes.c_void_p]
        self.bufs = {}

    def buffer(self, nelems):
        if nelems not in self.bufs:
            p = ctypes.c_void_p()
            check(self.rt.topsMalloc(ctypes.byref(p), nelems * 4), "topsMalloc")
            check(self.rt.topsMemsetAsync(p, 0, ctypes.c_size_t(nelems * 4), self.stream),
                  "topsMemsetAsync")  # zeros: a repeated in-place Sum stays finite
            self.bufs[nelems] = p
        return self.bufs[nelems]

    def allreduce(self, nelems):
        buf = self.buffer(nelems)
        check(self.ccl.ecclAllReduce(buf, buf, nelems, FLOAT32, SUM, self.comm, self.stream),
              "ecclAllReduce")
        check(self.rt.topsStreamSynchronize(self.stream), "topsStreamSynchronize")


def timed(fn, iters, tag):
    hvd.barrier()
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    worst = hvd.allreduce(torch.tensor(times, dtype=torch.float64), op=hvd.Max,
                          name=f"bench.t.{tag}.{iters}")
    return statistics.median(worst.tolist())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--sizes", default="4096,1048576,67108864", help="bytes, comma-separated")
    p.add_argument("--blocks", type=int, default=3, help="alternating blocks per size")
    a = p.parse_args()
    torch.set_num_threads(1)
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    device = hvd.local_rank() % torch.gcu.device_count()
    direct = DirectEccl(device, rank, size)
    results = []
    for nbytes in (int(s) for s in a.sizes.split(",")):
        n = nbytes // 4
        iters = 300 if nbytes <= 65536 else (40 if nbytes <= 4 << 20 else 8)
        t = torch.zeros(n, device=torch.device("gcu", device))
        name = f"bench.{n}"
        hvd_fn = lambda: hvd.allreduce_(t, op=hvd.Sum, name=name)  # noqa: E731
        direct_fn = lambda: direct.allreduce(n)  # noqa: E731
        hvd_fn(), direct_fn()  # warm up: communicators, caches
        hv, dr = [], []
        for b in range(a.blocks):
            hv.append(timed(hvd_fn, iters, f"h{n}.{b}"))
            dr.append(timed(direct_fn, iters, f"d{n}.{b}"))
        results.append({"bytes": nbytes, "hvda_s": statistics.median(hv),
                        "direct_s": statistics.median(dr), "hvda_blocks": hv, "direct_blocks": dr})
    if rank == 0:
        with open(a.out, "w") as f:
            json.dump({"size": size, "results": results}, f)
    hvd.shutdown()


if __name__ == "__main__":
    main()
