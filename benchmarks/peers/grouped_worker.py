"""Grouped-vs-single worker (started by benchmarks/grouped.py through
horovodrun): per case, alternating blocks of hvd.grouped_allreduce_ of N
float32 tensors and hvd.allreduce_ of one tensor of the same total size
(both in place, Sum). Per block: mean time per call on this rank; per case:
the median over blocks of the max over ranks. Rank 0 writes JSON to --out.
"""
import argparse
import json
import statistics
import time

import torch

import horovod_accel.torch as hvd

# (total bytes, tensors): a 4 MiB bucket of 16 gradients, a 1 MiB one, and
# 100 small tensors (the size of the async-batch case of allreduce.py).
CASES = [(4 << 20, 16), (1 << 20, 16), (400000, 100)]
BLOCKS, CALLS = 6, 20


def block(fn, tag):
    hvd.barrier()
    start = time.perf_counter()
    for _ in range(CALLS):
        fn()
    mine = (time.perf_counter() - start) / CALLS
    return hvd.allreduce(torch.tensor([mine], dtype=torch.float64), op=hvd.Max,
                         name=f"bench.t.{tag}").item()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    a = p.parse_args()
    torch.set_num_threads(1)
    hvd.init()
    cases = []
    for total, parts in CASES:
        n = total // 4
        # Zeros: repeated in-place Sums stay finite.
        parts_list = [torch.zeros(n // parts) for _ in range(parts)]
        one = torch.zeros(n // parts * parts)
        grouped = lambda: hvd.grouped_allreduce_(parts_list, name="g", op=hvd.Sum)  # noqa: E731
        single = lambda: hvd.allreduce_(one, name="one", op=hvd.Sum)  # noqa: E731
        for _ in range(5):
            grouped(), single()
        g, s = [], []
        for b in range(BLOCKS):
            g.append(block(grouped, f"g{total}.{b}"))
            s.append(block(single, f"s{total}.{b}"))
        cases.append({"total_bytes": one.numel() * 4, "tensors": parts,
                      "grouped_us": statistics.median(g) * 1e6,
                      "single_us": statistics.median(s) * 1e6})
    if hvd.rank() == 0:
        with open(a.out, "w") as f:
            json.dump({"size": hvd.size(), "cases": cases}, f)
    hvd.shutdown()


if __name__ == "__main__":
    main()
