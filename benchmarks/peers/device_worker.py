"""Device overhead worker (started by benchmarks/device_overhead.py through
horovodrun): in one job, times

* hvda: hvd.allreduce_(t, op=hvd.Sum) on torch tensors on the device
  (synchronous: enqueue, negotiation, the plugin's collective on the
  communication stream, completion by event), and
* direct: the same collective library called straight through ctypes on the
  same libraries the plugin uses,

alternating blocks of the two per size so both see the same machine state.
Per iteration: max over ranks; per block: median. Rank 0 writes JSON to --out.

--device gcu (under scripts/emulated_gcu.sh): 'gcu' tensors; direct is
ecclAllReduce on a stream of its own + topsStreamSynchronize, on the emulated
TOPS runtime / ECCL that HOROVOD_GCU_RUNTIME_LIB / HOROVOD_ECCL_LIB name.

--device cuda (a GPU machine; HOROVOD_ACCEL_PLUGINS names the CUDA plugin):
'cuda' tensors; each hvda iteration ends with torch.cuda.synchronize() (the
rank waits for the device, as the direct call does); direct is ncclAllReduce
on torch's current stream + cudaStreamSynchronize, through the libcudart and
libnccl this process has mapped after the plugin ran its first collective
(the plugin shares the framework's copies: NOTE [Share the framework's
runtime]; HOROVOD_CUDA_RUNTIME_LIB / HOROVOD_NCCL_LIB win as in the plugin).
--device emucuda runs that same code over the emulated CUDA runtime + NCCL
(scripts/emulated_cuda.sh), a check of this code, not a measurement.
"""
import argparse
import ctypes
import glob
import json
import os
import statistics
import time

import torch

import horovod_accel.torch as hvd

FLOAT32, SUM = 7, 0  # ncclFloat32 / ecclFloat32, ncclSum / ecclSum (same numbering)
NON_BLOCKING = 1  # topsStreamNonBlocking


class UniqueId(ctypes.Structure):
    """ncclUniqueId / ecclUniqueId: 128 opaque bytes, passed by value."""
    _fields_ = [("internal", ctypes.c_char * 128)]


def check(rc, what):
    if rc != 0:
        raise RuntimeError(f"{what} failed with {rc}")


def shared_unique_id(get_unique_id, rank):
    """Rank 0's unique id, on every rank (hvd.broadcast_object)."""
    uid = UniqueId()
    if rank == 0:
        check(get_unique_id(ctypes.byref(uid)), "GetUniqueId")
    # All 128 bytes: the c_char array's value would stop at the first NUL.
    raw = hvd.broadcast_object(ctypes.string_at(ctypes.addressof(uid), 128) if rank == 0
                               else None, root_rank=0, name="bench.uid")
    ctypes.memmove(ctypes.addressof(uid), raw, 128)
    return uid


class DirectEccl:
    """The emulated ECCL called directly (what a hand-written ECCL user gets)."""

    def __init__(self, device, rank, size):
        self.rt = ctypes.CDLL(os.environ["HOROVOD_GCU_RUNTIME_LIB"])
        self.ccl = ctypes.CDLL(os.environ["HOROVOD_ECCL_LIB"])
        self.libs = {"runtime": os.environ["HOROVOD_GCU_RUNTIME_LIB"],
                     "ccl": os.environ["HOROVOD_ECCL_LIB"]}
        check(self.rt.topsSetDevice(device), "topsSetDevice")
        uid = shared_unique_id(self.ccl.ecclGetUniqueId, rank)
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

    def close(self):
        pass  # the job ends right after; the emulated ECCL needs no teardown


def mapped_libraries(prefix):
    """Distinct real paths of the files this process has mapped whose name
    starts with `prefix` (e.g. 'libnccl.so'), in /proc/self/maps order."""
    found = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) < 6:
                    continue
                path = parts[5].strip()
                if os.path.basename(path).startswith(prefix):
                    real = os.path.realpath(path)
                    if real not in found:
                        found.append(real)
    except OSError:
        pass
    return found


def torch_package_libraries(pattern):
    """Libraries of torch's nvidia-* wheels (site-packages/nvidia/*/lib),
    the fallback when nothing is mapped yet."""
    site = os.path.dirname(os.path.dirname(torch.__file__))
    return sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib", pattern)))


def pick_library(env_var, prefix, pattern, what):
    """The library the CUDA plugin uses: env_var's path if set (the plugin's
    override), else the copy this process has mapped (the plugin loaded the
    framework's own), else torch's wheel's. Returns (path, every candidate)."""
    if os.environ.get(env_var):
        return os.environ[env_var], [os.environ[env_var]]
    mapped = mapped_libraries(prefix)
    if mapped:
        return mapped[0], mapped
    packaged = torch_package_libraries(pattern)
    if packaged:
        return packaged[0], packaged
    raise RuntimeError(f"no {what} is mapped in this process and none was found in torch's "
                       f"nvidia packages; set {env_var} to its path")


class DirectNccl:
    """NCCL called directly on torch's current stream, through the same
    libcudart / libnccl the CUDA plugin uses (what a hand-written NCCL user
    gets). Signatures (NCCL's API documentation):
      ncclResult_t ncclGetVersion(int*)
      ncclResult_t ncclGetUniqueId(ncclUniqueId*)
      ncclResult_t ncclCommInitRank(ncclComm_t*, int nranks, ncclUniqueId (by value), int rank)
      ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count,
                                 ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t)
      ncclResult_t ncclCommDestroy(ncclComm_t)
      cudaError_t cudaStreamSynchronize(cudaStream_t)
    ncclFloat32 = 7, ncclSum = 0; every result 0 = success."""

    def __init__(self, device_type, device, rank, size):
        mod = getattr(torch, device_type)
        self.device_type, self.mod = device_type, mod
        self.dev = torch.device(device_type, device)
        rt_path, rt_all = pick_library("HOROVOD_CUDA_RUNTIME_LIB", "libcudart.so",
                                       "libcudart.so*", "CUDA runtime")
        nccl_path, nccl_all = pick_library("HOROVOD_NCCL_LIB", "libnccl.so", "libnccl.so*",
                                           "NCCL")
        self.libs = {"runtime": rt_path, "ccl": nccl_path,
                     "runtime_candidates": rt_all, "ccl_candidates": nccl_all}
        self.rt = ctypes.CDLL(rt_path)  # already loaded: the same handle, no second copy
        self.nccl = ctypes.CDLL(nccl_path)
        c_int_p = ctypes.POINTER(ctypes.c_int)
        n = self.nccl
        n.ncclGetVersion.argtypes, n.ncclGetVersion.restype = [c_int_p], ctypes.c_int
        n.ncclGetUniqueId.argtypes, n.ncclGetUniqueId.restype = [ctypes.POINTER(UniqueId)], ctypes.c_int
        n.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, UniqueId,
                                       ctypes.c_int]
        n.ncclCommInitRank.restype = ctypes.c_int
        n.ncclAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                    ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        n.ncclAllReduce.restype = ctypes.c_int
        n.ncclCommDestroy.argtypes, n.ncclCommDestroy.restype = [ctypes.c_void_p], ctypes.c_int
        self.rt.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
        self.rt.cudaStreamSynchronize.restype = ctypes.c_int
        version = ctypes.c_int()
        check(n.ncclGetVersion(ctypes.byref(version)), "ncclGetVersion")
        self.libs["nccl_version"] = version.value
        # ncclCommInitRank binds the calling thread's current device: torch
        # set it (set_device) in the same runtime.
        uid = shared_unique_id(n.ncclGetUniqueId, rank)
        self.comm = ctypes.c_void_p()
        check(n.ncclCommInitRank(ctypes.byref(self.comm), size, uid, rank), "ncclCommInitRank")
        stream = mod.current_stream(self.dev)
        self.stream = ctypes.c_void_p(getattr(stream, f"{device_type}_stream"))
        self.bufs = {}

    def buffer(self, nelems):
        if nelems not in self.bufs:
            # zeros: a repeated in-place Sum stays finite
            self.bufs[nelems] = torch.zeros(nelems, dtype=torch.float32, device=self.dev)
            self.mod.synchronize()
        return self.bufs[nelems].data_ptr()

    def allreduce(self, nelems):
        buf = self.buffer(nelems)
        check(self.nccl.ncclAllReduce(buf, buf, nelems, FLOAT32, SUM, self.comm, self.stream),
              "ncclAllReduce")
        check(self.rt.cudaStreamSynchronize(self.stream), "cudaStreamSynchronize")

    def close(self):
        if self.comm:
            self.mod.synchronize()
            check(self.nccl.ncclCommDestroy(self.comm), "ncclCommDestroy")
            self.comm = ctypes.c_void_p()


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


def iterations(device_type, nbytes):
    if device_type == "cuda":  # real devices: microseconds per op even at 64 MiB
        return 500 if nbytes <= 65536 else (200 if nbytes <= 4 << 20 else 50)
    return 300 if nbytes <= 65536 else (40 if nbytes <= 4 << 20 else 8)


def parse_args(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--device", default="gcu", choices=["gcu", "cuda", "emucuda"])
    p.add_argument("--sizes", default="4096,1048576,67108864", help="bytes, comma-separated")
    p.add_argument("--blocks", type=int, default=3, help="alternating blocks per size")
    return p.parse_args(argv)


def main():
    a = parse_args()
    torch.set_num_threads(1)
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    mod = getattr(torch, a.device)
    device = hvd.local_rank() % mod.device_count()
    dev = torch.device(a.device, device)
    info = {}
    if a.device == "gcu":
        direct = DirectEccl(device, rank, size)
        hvd_sync = None  # as measured before: hvd.allreduce_ returns once the device ran it
    else:
        mod.set_device(device)
        # One collective through the plugin first: it binds the device and
        # loads the plugin's libraries, which DirectNccl then finds mapped.
        hvd.allreduce_(torch.zeros(1, device=dev), op=hvd.Sum, name="bench.warm")
        mod.synchronize()
        direct = DirectNccl(a.device, device, rank, size)
        hvd_sync = mod.synchronize
        if a.device == "cuda":
            info["gpu"] = torch.cuda.get_device_name(device)
            info["torch_cuda"] = torch.version.cuda
    info.update(direct.libs)
    results = []
    for nbytes in (int(s) for s in a.sizes.split(",")):
        n = nbytes // 4
        iters = iterations(a.device, nbytes)
        t = torch.zeros(n, device=dev)
        name = f"bench.{n}"
        if hvd_sync is None:
            hvd_fn = lambda: hvd.allreduce_(t, op=hvd.Sum, name=name)  # noqa: E731
        else:
            def hvd_fn(t=t, name=name):
                hvd.allreduce_(t, op=hvd.Sum, name=name)
                hvd_sync()
        direct_fn = lambda: direct.allreduce(n)  # noqa: E731
        hvd_fn(), direct_fn()  # warm up: communicators, caches
        hv, dr = [], []
        for b in range(a.blocks):
            hv.append(timed(hvd_fn, iters, f"h{n}.{b}"))
            dr.append(timed(direct_fn, iters, f"d{n}.{b}"))
        results.append({"bytes": nbytes, "iters": iters, "hvda_s": statistics.median(hv),
                        "direct_s": statistics.median(dr), "hvda_blocks": hv, "direct_blocks": dr})
    direct.close()
    if rank == 0:
        with open(a.out, "w") as f:
            json.dump({"size": size, "device": a.device, "info": info, "results": results}, f)
    hvd.shutdown()


if __name__ == "__main__":
    main()
