"""Measurement loops shared by the three allreduce workers (hvda, torch gloo, MPI).

Each worker wraps its library in a small `Backend` object (see the docstring of
`run`) and calls `main(backend_factory)`. Every timing rule lives here, once, so
the three peers are measured by exactly the same code:

* busbw, per size: `warmup` untimed allreduces, one barrier, then `iters`
  back-to-back in-place Sum allreduces, each timed on every rank with
  time.perf_counter(). Per iteration we take the MAX over ranks (one extra
  MAX-allreduce of the timing vector after the block, untimed), then the
  MEDIAN over iterations. busbw = bytes * 2(n-1)/n / median; algbw = bytes / median.
* latency: the same loop at 4 KiB with >= 200 iterations; median and p90 of
  the per-iteration max-over-ranks times.
* async batch: per repetition: barrier, then enqueue `batch` allreduces of
  `batch_elems` float32 each and wait for all of them; the repetition is timed
  on every rank, max over ranks, median over repetitions.

Buffers hold zeros during timing (a repeated in-place Sum of non-zero data would
overflow to inf); a correctness check with non-zero data runs first.

Only rank 0 writes results: one JSON object to the path given by --out.
"""
import argparse
import json
import os
import statistics
import time

WORKER_VERSION = 1


def parse_worker_args(argv=None):
    p = argparse.ArgumentParser(description="allreduce benchmark worker (started by benchmarks/allreduce.py)")
    p.add_argument("--out", required=True, help="rank 0 writes its JSON result here")
    p.add_argument("--config", required=True, help="JSON plan: sizes, iteration counts")
    return p.parse_args(argv)


def percentile(values, q):
    """Nearest-rank percentile (q in [0, 100]) of a non-empty list."""
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(q / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def _timed_block(backend, buf, iters):
    """Barrier, then `iters` back-to-back allreduces of `buf`; returns the
    per-iteration max-over-ranks times in seconds."""
    times = [0.0] * iters
    backend.barrier()
    for i in range(iters):
        t0 = time.perf_counter()
        backend.allreduce_inplace(buf)
        times[i] = time.perf_counter() - t0
    return backend.max_over_ranks(times)


def _check_correctness(backend):
    """One small Sum allreduce of rank-dependent data; raises on a wrong result."""
    n = 1000
    buf = backend.make_buffer(n, fill=float(backend.rank + 1))
    backend.allreduce_inplace(buf)
    expect = backend.size * (backend.size + 1) / 2.0
    got = backend.to_list(buf)
    bad = [i for i, v in enumerate(got) if v != expect]
    if bad:
        raise RuntimeError(f"{backend.name}: allreduce Sum wrong on rank {backend.rank}: "
                           f"element {bad[0]} = {got[bad[0]]}, expected {expect}")


def run(backend, cfg):
    """Runs every measurement of `cfg` on `backend`; returns the result dict.

    The backend provides: name, rank, size, barrier(), make_buffer(nelems, fill)
    (a float32 buffer), allreduce_inplace(buf) (blocks until done),
    async_batch(bufs) (enqueues one allreduce per buffer, then waits for all),
    max_over_ranks(list of float) -> list of float, to_list(buf).
    """
    _check_correctness(backend)
    n = backend.size
    result = {"peer": backend.name, "size": n, "busbw": {}, "worker_version": WORKER_VERSION}

    # (a) bus bandwidth per message size.
    for nbytes, iters, warmup in cfg["sizes"]:
        buf = backend.make_buffer(nbytes // 4, fill=0.0)
        for _ in range(warmup):
            backend.allreduce_inplace(buf)
        times = _timed_block(backend, buf, iters)
        med = statistics.median(times)
        result["busbw"][str(nbytes)] = {
            "bytes": nbytes, "iters": iters, "warmup": warmup,
            "median_s": med, "min_s": min(times), "max_s": max(times),
            "algbw_GBps": nbytes / med / 1e9,
            "busbw_GBps": nbytes * 2.0 * (n - 1) / n / med / 1e9,
        }
        del buf

    # (b) 4 KiB synchronous latency.
    lat = cfg["latency"]
    buf = backend.make_buffer(lat["bytes"] // 4, fill=0.0)
    for _ in range(lat["warmup"]):
        backend.allreduce_inplace(buf)
    times = _timed_block(backend, buf, lat["iters"])
    result["latency"] = {"bytes": lat["bytes"], "iters": lat["iters"],
                         "median_s": statistics.median(times), "p90_s": percentile(times, 90),
                         "min_s": min(times)}

    # (c) batch of small async allreduces.
    b = cfg["batch"]
    bufs = [backend.make_buffer(b["elems"], fill=0.0) for _ in range(b["count"])]
    for _ in range(b["warmup"]):
        backend.async_batch(bufs)
    reps = [0.0] * b["reps"]
    for r in range(b["reps"]):
        backend.barrier()
        t0 = time.perf_counter()
        backend.async_batch(bufs)
        reps[r] = time.perf_counter() - t0
    reps = backend.max_over_ranks(reps)
    result["batch"] = {"count": b["count"], "elems": b["elems"], "reps": b["reps"],
                       "median_s": statistics.median(reps), "min_s": min(reps)}
    return result


def main(make_backend, argv=None):
    """Worker entry point: builds the backend, runs the plan, rank 0 writes --out."""
    args = parse_worker_args(argv)
    with open(args.config) as f:
        cfg = json.load(f)
    backend = make_backend()
    result = run(backend, cfg)
    if backend.rank == 0:
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(result, f)
        os.replace(tmp, args.out)  # the driver never sees a half-written file
    backend.finish()
