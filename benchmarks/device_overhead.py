"""What horovod_accel adds on top of a device's own collective library.

One horovodrun job per run times hvd.allreduce_ of torch device tensors and
the same collective library called directly, alternating, in the same
processes (benchmarks/peers/device_worker.py). Reported per size: both
medians, the throughput ratio direct/hvda (1.0 = no overhead) and the added
latency.

--device gcu (default): the emulated GCU (tests/emulated: TOPS runtime + ECCL
on the host, under scripts/emulated_gcu.sh), np 2; direct is ecclAllReduce.
Targets (issue 7): ratio >= 0.8 at 64 MiB, added latency <= 30 us at 4 KiB.

--device cuda: a GPU machine; the CUDA plugin (build/devices, built or
brought up to date first, or --plugin) serves torch 'cuda' tensors; direct is ncclAllReduce +
cudaStreamSynchronize on torch's current stream through the same libcudart /
libnccl. np defaults to the number of GPUs, at most 2. Skipped, with a
message and exit status 0, where torch sees no GPU.

--device emucuda: the cuda code path over the emulated CUDA runtime + NCCL
(scripts/emulated_cuda.sh): checks this benchmark without a GPU; its numbers
say nothing about GPUs.

    .venv/bin/python benchmarks/device_overhead.py [--np 2] [--runs 3]
    python3 benchmarks/device_overhead.py --device cuda --runs 3

Runs are repeated (--runs) and the spread is printed: this VM class jitters.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from json_job import run_json_job

REPO = Path(__file__).resolve().parents[1]
CUDA_PLUGIN = REPO / "build" / "devices" / "libhorovod_accel_cuda.so"
# What each mode names its direct peer in the table.
DIRECT_NAME = {"gcu": "direct ECCL", "cuda": "direct NCCL", "emucuda": "direct NCCL"}
WHERE = {"gcu": "the emulated GCU", "cuda": "CUDA", "emucuda": "the emulated CUDA stack"}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="gcu", choices=["gcu", "cuda", "emucuda"],
                   help="gcu: emulated GCU (default); cuda: a real GPU; emucuda: the cuda code "
                        "path on the emulated CUDA stack")
    p.add_argument("--np", type=int, default=None,
                   help="ranks (default: 2; cuda: the number of GPUs, at most 2)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--sizes", default="4096,1048576,67108864", help="bytes, comma-separated")
    p.add_argument("--plugin", default=None,
                   help=f"--device cuda: the CUDA plugin library (default {CUDA_PLUGIN}, "
                        "built or brought up to date first)")
    a = p.parse_args(argv)
    if a.np is not None and a.np < 1:
        p.error("--np must be >= 1")
    if a.runs < 1:
        p.error("--runs must be >= 1")
    try:
        sizes = [int(s) for s in a.sizes.split(",")]
    except ValueError:
        p.error(f"--sizes: comma-separated byte counts, not {a.sizes!r}")
    if not sizes or any(s < 4 or s % 4 for s in sizes):
        p.error("--sizes: each size must be a positive multiple of 4 bytes (float32)")
    if a.plugin is not None and a.device != "cuda":
        p.error("--plugin goes with --device cuda")
    return a


def cuda_setup(a):
    """(np, wrapper) for --device cuda, or None (with a message) where torch
    sees no GPU."""
    try:
        import torch
    except ImportError as e:
        print(f"device_overhead: --device cuda skipped: torch cannot be imported ({e})")
        return None
    if not torch.cuda.is_available():
        print("device_overhead: --device cuda skipped: torch.cuda.is_available() is False "
              f"(torch {torch.__version__}, built for CUDA {torch.version.cuda}): no GPU here")
        return None
    gpus = torch.cuda.device_count()
    np_ = a.np or min(2, gpus)
    if np_ > gpus:
        print(f"device_overhead: note: np {np_} ranks share {gpus} GPU(s); NCCL wants one rank "
              "per GPU")
    plugin = Path(a.plugin) if a.plugin else CUDA_PLUGIN
    if a.plugin is None:
        # Incremental: a no-op when built; the same build as test_accel_device.py's.
        subprocess.run(["bash", "-c", ". scripts/emulated_env.sh && _hvda_build csrc/devices "
                        "build/devices horovod_accel_cuda"], cwd=str(REPO), check=True,
                       timeout=900)
    if not plugin.is_file():
        sys.exit(f"device_overhead: no CUDA plugin at {plugin}")
    # run_json_job drops the caller's HOROVOD_* variables; these go back in
    # through `env` (the plugin's library overrides only where set).
    keep = [f"{k}={os.environ[k]}" for k in ("HOROVOD_CUDA_RUNTIME_LIB", "HOROVOD_NCCL_LIB")
            if os.environ.get(k)]
    return np_, ["env", f"HOROVOD_ACCEL_PLUGINS={plugin.resolve()}", *keep]


def one_run(np_, device, sizes, out, wrapper):
    return run_json_job(np_, "device_worker.py", out, ["--device", device, "--sizes", sizes],
                        wrapper=wrapper)


def label(size):
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"


def report(runs, device, np_):
    info = runs[0].get("info", {})
    print(f"device overhead on {WHERE[device]}, np={np_}, {len(runs)} runs "
          f"(median of per-run medians; [min..max] over runs)")
    if device != "gcu":
        if info.get("gpu"):
            print(f"  GPU: {info['gpu']}, torch CUDA {info.get('torch_cuda')}")
        v = info.get("nccl_version")
        if v:
            print(f"  NCCL {v // 10000}.{v // 100 % 100}.{v % 100} ({v}): {info.get('ccl')}")
        print(f"  CUDA runtime: {info.get('runtime')}")
        for key, what in (("runtime_candidates", "CUDA runtimes"), ("ccl_candidates", "NCCLs")):
            if len(info.get(key, [])) > 1:
                print(f"  warning: this process mapped {len(info[key])} {what}: {info[key]}")
    direct = DIRECT_NAME[device]
    print(f"{'size':>9} {'hvda':>11} {direct:>12} {'ratio':>16} {'added':>22}")
    for k, first in enumerate(runs[0]["results"]):
        hv = [r["results"][k]["hvda_s"] for r in runs]
        dr = [r["results"][k]["direct_s"] for r in runs]
        ratio = [d / h for d, h in zip(dr, hv)]
        added = [(h - d) * 1e6 for d, h in zip(dr, hv)]
        print(f"{label(first['bytes']):>9} {statistics.median(hv) * 1e6:>9.1f}us "
              f"{statistics.median(dr) * 1e6:>10.1f}us "
              f"{statistics.median(ratio):>5.2f} [{min(ratio):.2f}..{max(ratio):.2f}] "
              f"{statistics.median(added):>7.1f}us [{min(added):.0f}..{max(added):.0f}]")


def main(argv=None):
    a = parse_args(argv)
    if a.device == "cuda":
        setup = cuda_setup(a)
        if setup is None:
            return 0
        np_, wrapper = setup
    elif a.device == "emucuda":
        np_, wrapper = a.np or 2, ["bash", str(REPO / "scripts" / "emulated_cuda.sh")]
    else:
        np_, wrapper = a.np or 2, ["bash", str(REPO / "scripts" / "emulated_gcu.sh")]
    runs = []
    with tempfile.TemporaryDirectory() as d:
        for i in range(a.runs):
            runs.append(one_run(np_, a.device, a.sizes, os.path.join(d, f"run{i}.json"), wrapper))
    report(runs, a.device, np_)
    return 0


if __name__ == "__main__":
    sys.exit(main())
