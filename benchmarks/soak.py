#!/usr/bin/env python
"""Soak: many training steps at np 3 with each rank's RSS sampled, to see
whether memory grows over a long run (goal: < 5% from warm-up to the end).

    .venv/bin/python benchmarks/soak.py                          # 10,000 steps, np 3
    .venv/bin/python benchmarks/soak.py --steps 500              # smoke run
    .venv/bin/python benchmarks/soak.py --np 2 --steps 2000 --hidden 128 --json /tmp/soak.json

Run directly, the script starts itself on --np ranks through horovodrun
(`python -m horovod_accel.runner.launch -np N python soak.py --worker ...`)
and passes the job's output through. Every rank trains the same small MLP
(CPU, torch.set_num_threads(1)) on its own fixed pool of synthetic batches
with hvd.DistributedOptimizer, after broadcast_parameters and
broadcast_optimizer_state. Every --collective-every steps it also runs an
unnamed metric allreduce, an allgather_object and a broadcast_object, so the
handle tables, unnamed-op counters, name reservations and object-op paths get
soaked alongside the gradient allreduces.

RSS (/proc/self/statm) is sampled every --sample-every steps; "warm-up" is the
sample at 10% of the steps, "end" the one after the last step. Per rank the
job prints RSS at warm-up, at the end, growth % (end vs warm-up), the largest
sample, the post-warm-up slope (KiB per 1000 steps, least squares) and
steps/s after warm-up; rank 0 adds a job summary (max growth over ranks).
At the end every rank's parameters are checksummed and compared across ranks.
Exit status is non-zero only on errors (a failed rank, a timeout, ranks whose
parameters disagree), never on growth: this is a benchmark, not a test.
Not run in CI (10,000 steps take minutes on a small box). See benchmarks/README.md.
"""
import argparse
import hashlib
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)

PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = float(1 << 20)
IN_FEATURES, CLASSES, BATCH, POOL = 64, 10, 32, 16


def rss_bytes():
    """Resident set size of this process now (second field of /proc/self/statm)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except OSError:  # not Linux: peak instead of current, better than nothing
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def rss_parts():
    """{'RssAnon': bytes, 'RssFile': ..., 'RssShmem': ...} from /proc/self/status
    (anonymous memory is where a leak shows; file and shmem pages are mapped
    libraries and the shared-memory transport), {} where not available."""
    parts = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("RssAnon:", "RssFile:", "RssShmem:")):
                    key, val = line.split(":", 1)
                    parts[key] = int(val.split()[0]) * 1024
    except OSError:
        pass
    return parts


def fmt_parts(parts):
    return "/".join(f"{parts[k] / MIB:.1f}" for k in ("RssAnon", "RssFile", "RssShmem")
                    if k in parts)


def slope_per_1000(samples):
    """Least-squares slope of RSS (bytes) over steps, per 1000 steps."""
    if len(samples) < 2:
        return 0.0
    xs = [s for s, _ in samples]
    ys = [r for _, r in samples]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    if den == 0:
        return 0.0
    return 1000.0 * sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den


# ---------------------------------------------------------------- worker (one rank)

def worker(a):
    import torch
    import torch.nn.functional as F
    import horovod.torch as hvd

    torch.set_num_threads(1)
    hvd.init()
    rank, size = hvd.rank(), hvd.size()

    # Rank-dependent init: broadcast_parameters has to make the ranks agree.
    torch.manual_seed(100 + rank)
    model = torch.nn.Sequential(
        torch.nn.Linear(IN_FEATURES, a.hidden), torch.nn.ReLU(),
        torch.nn.Linear(a.hidden, a.hidden), torch.nn.ReLU(),
        torch.nn.Linear(a.hidden, CLASSES))
    opt = torch.optim.SGD(model.parameters(), lr=0.01 * size, momentum=0.9)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())

    # Synthetic data: a fixed teacher (same on every rank) labels a fixed pool of
    # per-rank inputs, so the loss falls and no data is allocated inside the loop.
    teacher = torch.randn(IN_FEATURES, CLASSES, generator=torch.Generator().manual_seed(7))
    g = torch.Generator().manual_seed(1000 + rank)
    pool = []
    for _ in range(POOL):
        x = torch.randn(BATCH, IN_FEATURES, generator=g)
        pool.append((x, (x @ teacher).argmax(dim=1)))

    warm_step = max(1, a.steps // 10)
    samples = []            # (steps done, RSS bytes)
    warm_rss = warm_t = None
    warm_parts = end_parts = {}
    loss_val = float("nan")
    extra_ops = 0
    progress_every = max(1, a.steps // 10)
    t_start = time.perf_counter()
    for step in range(1, a.steps + 1):
        x, y = pool[step % POOL]
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

        if step % a.collective_every == 0:
            # Unnamed metric allreduce (the auto-named path), then the object ops.
            avg = hvd.allreduce(loss.detach(), op=hvd.Average)
            loss_val = float(avg)
            seen = hvd.allgather_object({"rank": rank, "step": step, "loss": loss.item()})
            if [d["step"] for d in seen] != [step] * size:
                raise RuntimeError(f"allgather_object at step {step}: got {seen}")
            cfg = hvd.broadcast_object({"step": step, "lr": opt.param_groups[0]["lr"]}
                                       if rank == 0 else None, root_rank=0)
            if cfg["step"] != step:
                raise RuntimeError(f"broadcast_object at step {step}: got {cfg}")
            extra_ops += 1

        if step == warm_step:
            warm_rss, warm_t, warm_parts = rss_bytes(), time.perf_counter(), rss_parts()
            samples.append((step, warm_rss))
        elif step > warm_step and (step % a.sample_every == 0 or step == a.steps):
            samples.append((step, rss_bytes()))
            if step == a.steps:
                end_parts = rss_parts()
        if rank == 0 and step % progress_every == 0:
            el = time.perf_counter() - t_start
            print(f"soak: step {step}/{a.steps}  rss {rss_bytes() / MIB:.1f} MiB  "
                  f"loss {loss_val:.4f}  {step / el:.0f} steps/s", flush=True)
    t_end = time.perf_counter()

    # Do the ranks hold the same parameters? Exact hash first; if that differs,
    # the largest elementwise spread (Max - Min allreduce) says by how much.
    flat = torch.cat([p.detach().reshape(-1).double() for p in model.parameters()])
    digest = hashlib.sha256(flat.numpy().tobytes()).hexdigest()[:16]
    checks = hvd.allgather_object((digest, float(flat.sum())), name="soak.checksum")
    identical = len({d for d, _ in checks}) == 1
    spread = 0.0
    if not identical:
        hi = hvd.allreduce(flat, op=hvd.Max, name="soak.params.max")
        lo = hvd.allreduce(flat, op=hvd.Min, name="soak.params.min")
        spread = float((hi - lo).abs().max())

    end_rss = samples[-1][1]
    post_steps = a.steps - warm_step
    mine = {
        "rank": rank,
        "warm_rss": warm_rss, "end_rss": end_rss,
        "max_rss": max(r for _, r in samples),
        "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "growth_pct": 100.0 * (end_rss - warm_rss) / warm_rss,
        "slope_per_1000": slope_per_1000(samples),
        "steps_per_s": post_steps / (t_end - warm_t) if post_steps else 0.0,
        "steps_per_s_all": a.steps / (t_end - t_start),
        "warm_parts": warm_parts, "end_parts": end_parts,
        "samples": samples,
        "checksum": checks[rank][0],
    }
    print(f"soak rank {rank}: RSS warm-up (step {warm_step}) {warm_rss / MIB:.1f} MiB, "
          f"end (step {a.steps}) {end_rss / MIB:.1f} MiB, growth {mine['growth_pct']:+.2f}%, "
          f"max {mine['max_rss'] / MIB:.1f} MiB, slope {mine['slope_per_1000'] / 1024:+.1f} KiB/1000 steps, "
          f"{mine['steps_per_s']:.0f} steps/s after warm-up; anon/file/shmem MiB "
          f"{fmt_parts(warm_parts)} -> {fmt_parts(end_parts)}", flush=True)

    allr = hvd.allgather_object(mine, name="soak.results")
    if rank == 0:
        worst = max(allr, key=lambda r: r["growth_pct"])
        verdict = "under" if worst["growth_pct"] < 5.0 else "OVER"
        agree = ("identical on all ranks" if identical else
                 f"DIFFER across ranks (max |spread| {spread:.3g})")
        print(f"soak job: np {size}, {a.steps} steps (warm-up {warm_step}), hidden {a.hidden}, "
              f"{len(samples)} RSS samples/rank, {extra_ops} x (unnamed allreduce + allgather_object"
              f" + broadcast_object); max growth over ranks {worst['growth_pct']:+.2f}% "
              f"(rank {worst['rank']}; {verdict} the 5% goal); "
              f"{min(r['steps_per_s'] for r in allr):.0f} steps/s (slowest rank); "
              f"final loss {loss_val:.4f}; parameters {agree} (sha256 {digest})", flush=True)
        if a.out:
            with open(a.out, "w") as f:
                json.dump({"np": size, "steps": a.steps, "warm_step": warm_step,
                           "hidden": a.hidden, "sample_every": a.sample_every,
                           "collective_every": a.collective_every, "extra_op_rounds": extra_ops,
                           "final_loss": loss_val, "params_identical": identical,
                           "param_spread": spread, "ranks": allr}, f, indent=1)
    hvd.shutdown()
    return 0 if identical else 3


# ---------------------------------------------------------------- driver

def driver(a):
    from allreduce import busy_processes, job_env, stop_job  # noqa: E402 (benchmarks/ on path)

    env = job_env()
    load = os.getloadavg()[0]
    print(f"soak: np {a.np}, {a.steps} steps, hidden {a.hidden}, RSS every {a.sample_every} steps, "
          f"object ops every {a.collective_every} steps; {os.cpu_count()} CPUs, load {load:.2f}",
          flush=True)
    if busy_processes():
        print("WARNING: build processes running: steps/s will be noise", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="hvda_soak_") as workdir:
        out = os.path.join(workdir, "soak.json")
        cmd = ([sys.executable, "-m", "horovod_accel.runner.launch", "-np", str(a.np)]
               + shlex.split(a.hvda_args)
               + [sys.executable, os.path.abspath(__file__), "--worker", "--out", out,
                  "--steps", str(a.steps), "--sample-every", str(a.sample_every),
                  "--hidden", str(a.hidden), "--collective-every", str(a.collective_every)])
        if a.verbose:
            print("  $ " + " ".join(shlex.quote(c) for c in cmd), file=sys.stderr)
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, env=env, cwd=REPO_ROOT, start_new_session=True)
        try:
            rc = proc.wait(timeout=a.timeout)
        except subprocess.TimeoutExpired:
            stop_job(proc)
            print(f"soak: FAILED: timed out after {a.timeout:.0f} s", file=sys.stderr)
            return 124
        except KeyboardInterrupt:
            stop_job(proc)
            raise
        wall = time.monotonic() - t0
        result = None
        if os.path.exists(out):
            with open(out) as f:
                result = json.load(f)
        if rc != 0 or result is None:
            print(f"soak: FAILED: job exit code {rc}"
                  + ("" if result else ", no result written"), file=sys.stderr)
            return rc or 1
        print(f"soak: job wall time {wall:.0f} s, load {os.getloadavg()[0]:.2f} at end")
        if a.json:
            result.update({"argv": sys.argv, "load_before": load, "wall_s": wall})
            with open(a.json, "w") as f:
                json.dump(result, f, indent=1)
    return 0


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=10000, help="training steps (default 10000)")
    p.add_argument("--np", type=int, default=3, help="ranks (default 3)")
    p.add_argument("--sample-every", type=int, default=100,
                   help="RSS sample interval in steps after warm-up (default 100)")
    p.add_argument("--hidden", type=int, default=256, help="MLP hidden width (default 256)")
    p.add_argument("--collective-every", type=int, default=20,
                   help="steps between metric allreduce + allgather_object + broadcast_object "
                        "rounds (default 20)")
    p.add_argument("--hvda-args", default="", help="extra horovodrun arguments")
    p.add_argument("--timeout", type=float, default=3600.0, help="hard limit for the job (s)")
    p.add_argument("--json", metavar="PATH", help="also write per-rank numbers and samples here")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    for opt in ("steps", "np", "sample_every", "hidden", "collective_every"):
        if getattr(a, opt) < 1:
            p.error(f"--{opt.replace('_', '-')} must be >= 1")
    if a.steps < 10:
        p.error("--steps must be >= 10 (warm-up is 10% of the steps)")
    return a


def main(argv=None):
    a = parse_args(argv)
    if a.worker:
        return worker(a)
    sys.path.insert(0, HERE)
    return driver(a)


if __name__ == "__main__":
    sys.exit(main())
