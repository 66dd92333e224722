#!/usr/bin/env python
"""4 KiB float32 allreduce (Sum) latency through horovod_accel's TensorFlow
adapter (inside a tf.function, and in eager mode) against the same through its
torch adapter, in the same processes.

    .venv/bin/python benchmarks/tf_latency.py                  # np 2, 3 jobs, ~30-60 s
    .venv/bin/python benchmarks/tf_latency.py --repeats 1 --blocks 20 --json /tmp/lat.json

Each repeat is one job: python -m horovod_accel.runner.launch -np N python
tf_latency.py --worker. Every rank imports both frameworks; one hvd.init()
(horovod.tensorflow) serves horovod.torch too (one shared runtime). What is
measured, per mode, is a block of --calls back-to-back synchronous
allreduces of one 1024-float32 tensor (4 KiB), each call's input being the
previous call's output (zeros, so Sum stays finite):
  tf.function  one call of a tf.function whose body chains --calls
               horovod.tensorflow.allreduce(t, op=Sum) ops (traced once;
               asynchronous kernels, completed by the core's background thread)
  tf eager     a Python loop of horovod.tensorflow.allreduce(t, op=Sum) (the
               kernel waits on the calling thread: core enqueue_wait)
  tf eager op  the same loop calling the op's generated wrapper directly
               (MPI_LIB.horovod_allreduce with a prebuilt name tensor): TF's
               dispatch + the kernel + the core, without horovod.tensorflow's
               Python layers
  torch        a Python loop of horovod.torch.allreduce_(t, op=Sum)
and, as a floor for TensorFlow's own per-op cost (no collective, no ratio):
  tf.function no-op   the same chain of `t + 0.0` in a tf.function
  tf eager no-op      a loop of `t + zero` (zero: a prebuilt scalar tensor, so
                      no Python-number conversion per call; an op with two
                      tensor inputs, like the allreduce's tensor and name)
per-call time = block time / --calls (perf_counter around the block, on
every rank). Modes take turns in rounds (order rotating every round; a
barrier and one untimed block before each mode's turn); after the job the
per-block times are MAX-reduced over ranks. Per mode: median and p90
(nearest rank) over blocks; per job the ratios mode/torch for the collective
modes (> 1: slower than torch); over repeats, the median and [min..max] of
those same-job ratios. See benchmarks/README.md.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from allreduce import (REPO_ROOT, busy_processes, job_env, reason_line, spread,  # noqa: E402
                       stop_job)
from peers.bench_common import percentile  # noqa: E402

MODES = ("tf.function", "tf eager", "tf eager op", "torch", "tf.function no-op",
         "tf eager no-op")
RATIO_MODES = MODES[:4]
FLOATS = 1024           # 4 KiB of float32


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3, help="jobs, one after another")
    p.add_argument("--calls", type=int, default=50, help="allreduces per timed block")
    p.add_argument("--blocks", type=int, default=60, help="timed blocks per mode and job")
    p.add_argument("--rounds", type=int, default=6, help="turns per mode (blocks split evenly)")
    p.add_argument("--timeout", type=float, default=300.0, help="hard limit per job (s)")
    p.add_argument("--json", metavar="PATH", help="also write every job's numbers here")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    return p.parse_args(argv)


# ---------------------------------------------------------------- worker (one rank)

def worker(a):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    import torch
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    torch.set_num_threads(1)
    import horovod.tensorflow as hvd_tf
    import horovod.torch as hvd_torch
    hvd_tf.init()
    assert hvd_torch.is_initialized() and hvd_torch.size() == hvd_tf.size()

    @tf.function
    def chain(t):
        for i in range(a.calls):
            t = hvd_tf.allreduce(t, op=hvd_tf.Sum, name=f"lat_fn_{i}")
        return t

    def eager(t):
        for _ in range(a.calls):
            t = hvd_tf.allreduce(t, op=hvd_tf.Sum, name="lat_eager")
        return t

    from horovod_accel.tensorflow.mpi_ops import MPI_LIB
    op_name = tf.constant("lat_eager_op")

    def eager_op(t):
        for _ in range(a.calls):
            t = MPI_LIB.horovod_allreduce(tensor=t, tensor_name=op_name, reduce_op=int(hvd_tf.Sum),
                                          prescale_factor=1.0, postscale_factor=1.0,
                                          blocking=True)
        return t

    @tf.function
    def chain_noop(t):
        for _ in range(a.calls):
            t = t + 0.0
        return t

    zero = tf.constant(0.0)

    def eager_noop(t):
        for _ in range(a.calls):
            t = t + zero
        return t

    def torch_loop(t):
        for _ in range(a.calls):
            hvd_torch.allreduce_(t, op=hvd_torch.Sum, name="lat_torch")
        return t

    run = {"tf.function": (chain, tf.zeros([FLOATS])), "tf eager": (eager, tf.zeros([FLOATS])),
           "tf eager op": (eager_op, tf.zeros([FLOATS])),
           "torch": (torch_loop, torch.zeros(FLOATS)),
           "tf.function no-op": (chain_noop, tf.zeros([FLOATS])),
           "tf eager no-op": (eager_noop, tf.zeros([FLOATS]))}
    check = tf.fill([FLOATS], float(hvd_tf.rank() + 1))
    want = hvd_tf.size() * (hvd_tf.size() + 1) / 2
    assert float(hvd_tf.allreduce(check, op=hvd_tf.Sum, name="lat_check")[0]) == want
    times = {m: [] for m in MODES}
    per_round = max(1, a.blocks // a.rounds)
    for rnd in range(a.rounds):
        k = rnd % len(MODES)
        for mode in MODES[k:] + MODES[:k]:
            fn, t = run[mode]
            hvd_tf.barrier()
            fn(t)                       # untimed: first-call effects after the switch
            for _ in range(per_round):
                t0 = time.perf_counter()
                fn(t)
                times[mode].append((time.perf_counter() - t0) / a.calls)
    flat = tf.constant([x for m in MODES for x in times[m]], dtype=tf.float64)
    flat = hvd_tf.allreduce(flat, op=hvd_tf.Max, name="lat_times").numpy().tolist()
    if hvd_tf.rank() == 0:
        n = len(times[MODES[0]])
        with open(a.out, "w") as f:
            json.dump({m: flat[i * n:(i + 1) * n] for i, m in enumerate(MODES)}, f)
    hvd_tf.shutdown()


# ---------------------------------------------------------------- driver

def run_job(a, workdir, rep, env):
    """One horovodrun job; {mode: [per-call seconds per block]} or raises RuntimeError."""
    out = os.path.join(workdir, f"lat.{rep}.json")
    cmd = [sys.executable, "-m", "horovod_accel.runner.launch", "-np", str(a.np), sys.executable,
           os.path.abspath(__file__), "--worker", "--out", out, "--calls", str(a.calls),
           "--blocks", str(a.blocks), "--rounds", str(a.rounds)]
    log_path = os.path.join(workdir, f"lat.{rep}.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                                cwd=REPO_ROOT, start_new_session=True)
        try:
            rc = proc.wait(timeout=a.timeout)
        except subprocess.TimeoutExpired:
            stop_job(proc)
            rc = None
    with open(log_path, errors="replace") as f:
        text = f.read()
    if rc != 0:
        print("\n".join("    | " + l for l in text.splitlines()[-15:]), file=sys.stderr)
        raise RuntimeError(f"timed out after {a.timeout:.0f} s" if rc is None
                           else f"exit code {rc}: {reason_line(text)}")
    with open(out) as f:
        return json.load(f)


def main(argv=None):
    a = parse_args(argv)
    if a.worker:
        return worker(a)
    env = job_env()
    load = os.getloadavg()[0]
    print(f"tf_latency: 4 KiB float32 Sum, np {a.np}, {a.repeats} job(s), {a.blocks} blocks of "
          f"{a.calls} calls per mode and job; {os.cpu_count()} CPUs; load {load:.2f}", flush=True)
    if busy_processes():
        print("WARNING: build processes running: numbers will be noise", file=sys.stderr)
    jobs = []
    with tempfile.TemporaryDirectory(prefix="hvda_tflat_") as workdir:
        for rep in range(a.repeats):
            t0 = time.monotonic()
            try:
                r = run_job(a, workdir, rep, env)
            except (RuntimeError, OSError, ValueError) as e:
                print(f"  job {rep}: failed ({e})", flush=True)
                continue
            jobs.append({m: {"median_s": statistics.median(v), "p90_s": percentile(v, 90), "blocks_s": v}
                         for m, v in r.items()})
            print(f"  job {rep}: " + ", ".join(f"{m} {jobs[-1][m]['median_s'] * 1e6:.1f} us"
                                               for m in RATIO_MODES)
                  + f" ({time.monotonic() - t0:.0f} s)", flush=True)
    if not jobs:
        return 1
    print(f"\nper-call time = block of {a.calls} calls / {a.calls}, max over ranks; median and "
          f"p90 over blocks, then median over jobs; ratios: same job, median [min..max] over "
          f"jobs (> 1: slower than torch). Load {load:.2f} at start, "
          f"{os.getloadavg()[0]:.2f} at end.")
    print("| mode | median (us) | p90 (us) | median / torch | p90 / torch |")
    print("|---|---|---|---|---|")
    for m in MODES:
        med = statistics.median(j[m]["median_s"] for j in jobs) * 1e6
        tail = statistics.median(j[m]["p90_s"] for j in jobs) * 1e6
        r_med, r_p90 = "", ""
        if m in RATIO_MODES:
            r_med = spread([j[m]["median_s"] / j["torch"]["median_s"] for j in jobs])
            r_p90 = spread([j[m]["p90_s"] / j["torch"]["p90_s"] for j in jobs])
        print(f"| {m} | {med:.1f} | {tail:.1f} | {r_med} | {r_p90} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"argv": sys.argv, "load_before": load, "load_after": os.getloadavg()[0],
                       "jobs": jobs}, f, indent=1)
    return 0 if len(jobs) == a.repeats else 1


if __name__ == "__main__":
    sys.exit(main())
