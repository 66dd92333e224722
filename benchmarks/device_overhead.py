"""What horovod_accel adds on top of a device's own collective library.

On the emulated GCU (tests/emulated: TOPS runtime + ECCL on the host), one
horovodrun job per run times hvd.allreduce_ of torch 'gcu' tensors and the same
ecclAllReduce called directly, alternating, in the same processes
(benchmarks/peers/device_worker.py). Reported per size: both medians, the
throughput ratio direct/hvda (1.0 = no overhead) and the added latency.
Targets (issue 7): ratio >= 0.8 at 64 MiB, added latency <= 30 us at 4 KiB.

    .venv/bin/python benchmarks/device_overhead.py [--np 2] [--runs 3]

Runs are repeated (--runs) and the spread is printed: this VM class jitters.
"""
import argparse
import os
import statistics
import tempfile
from pathlib import Path

from json_job import run_json_job

REPO = Path(__file__).resolve().parents[1]


def one_run(np_, sizes, out):
    return run_json_job(np_, "device_worker.py", out, ["--sizes", sizes],
                        wrapper=["bash", str(REPO / "scripts" / "emulated_gcu.sh")])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--sizes", default="4096,1048576,67108864")
    a = p.parse_args()
    runs = []
    with tempfile.TemporaryDirectory() as d:
        for i in range(a.runs):
            runs.append(one_run(a.np, a.sizes, os.path.join(d, f"run{i}.json")))
    print(f"device overhead on the emulated GCU, np={a.np}, {a.runs} runs "
          f"(median of per-run medians; [min..max] over runs)")
    print(f"{'size':>9} {'hvda':>11} {'direct ECCL':>12} {'ratio':>16} {'added':>22}")
    for k, first in enumerate(runs[0]["results"]):
        hv = [r["results"][k]["hvda_s"] for r in runs]
        dr = [r["results"][k]["direct_s"] for r in runs]
        ratio = [d / h for d, h in zip(dr, hv)]
        added = [(h - d) * 1e6 for d, h in zip(dr, hv)]
        size = first["bytes"]
        label = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
        print(f"{label:>9} {statistics.median(hv) * 1e6:>9.1f}us {statistics.median(dr) * 1e6:>10.1f}us "
              f"{statistics.median(ratio):>5.2f} [{min(ratio):.2f}..{max(ratio):.2f}] "
              f"{statistics.median(added):>7.1f}us [{min(added):.0f}..{max(added):.0f}]")


if __name__ == "__main__":
    main()
