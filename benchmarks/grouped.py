#!/usr/bin/env python
"""What fusing costs: a grouped allreduce of N tensors against one allreduce
of a single tensor of the same total size, in the same job.

    .venv/bin/python benchmarks/grouped.py            # np 2, 3 jobs
    .venv/bin/python benchmarks/grouped.py --np 3 --jobs 5

Each job (horovodrun -np N, peers/grouped_worker.py) alternates blocks of
hvd.grouped_allreduce_(tensors) and hvd.allreduce_(one tensor) per case and
reports per case the median time of both and their ratio grouped/single
(1.0 = fusing N tensors costs nothing over one buffer). The ratio is taken
within one job, so both sides see the same machine state; the driver prints
each ratio's median and [min..max] over the jobs. A DistributedOptimizer
bucket is such a group.
"""
import argparse
import os
import statistics
import tempfile

from json_job import run_json_job


def one_job(np_, out):
    return run_json_job(np_, "grouped_worker.py", out, timeout=600)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--jobs", type=int, default=3, help="jobs to run (the spread is over jobs)")
    a = p.parse_args()
    jobs = []
    with tempfile.TemporaryDirectory() as d:
        for j in range(a.jobs):
            jobs.append(one_job(a.np, os.path.join(d, f"job{j}.json")))
    print(f"grouped allreduce vs one tensor of the same size, np={a.np}, {a.jobs} jobs "
          "(median over jobs; ratio: median [min..max])")
    print(f"{'case':>22} {'grouped':>10} {'single':>10}   ratio grouped/single")
    for i, case in enumerate(jobs[0]["cases"]):
        g = [job["cases"][i]["grouped_us"] for job in jobs]
        s = [job["cases"][i]["single_us"] for job in jobs]
        r = [x / y for x, y in zip(g, s)]
        label = f"{case['total_bytes'] / 2**20:.2f} MiB in {case['tensors']}"
        print(f"{label:>22} {statistics.median(g):8.0f}us {statistics.median(s):8.0f}us   "
              f"{statistics.median(r):.2f} [{min(r):.2f}..{max(r):.2f}]")


if __name__ == "__main__":
    main()
