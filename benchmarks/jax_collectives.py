#!/usr/bin/env python
"""JAX collectives benchmark: horovod_accel inside jax.jit against mpi4jax
inside jax.jit (and mpi4py on numpy outside jit), allreduce per size and a
jitted MLP train step against the same step without communication ("ideal"),
measured back to back in one run, printed as one table with ratios.

    .venv/bin/python benchmarks/jax_collectives.py                  # np 2, every peer, 3 rounds
    .venv/bin/python benchmarks/jax_collectives.py --smoke          # tiny, one round, < 1 min
    .venv/bin/python benchmarks/jax_collectives.py --only hvda,mpi4jax --sizes 1M,64M --json o.json

Each peer is one job of --np processes, started by its own launcher; every
process runs jax_peers/jax_worker.py (the timing rules are written there):
  hvda     python -m horovod_accel.runner.launch -np N python jax_worker.py --peer hvda
  mpi4jax  mpirun.openmpi -np N <.venv-mpi4jax>/bin/python jax_worker.py --peer mpi4jax
  mpi4py   mpirun.openmpi -np N python jax_worker.py --peer mpi4py
  ideal    N independent `jax_worker.py --peer ideal` processes (train step only)
mpi4jax lives in a venv of its own, made by scripts/setup_mpi4jax.sh
(--mpi4jax-python to point elsewhere). A peer that cannot run here is shown as
"n/a (reason)" and the others still run. Every round runs every peer, in
reverse order every other round. See benchmarks/README.md, section "JAX".
"""
import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# Process handling and formatting shared with the allreduce benchmark.
from allreduce import (KIB, MIB, _layout, end_meta, fmt, human_size,  # noqa: E402
                       job_env, parse_size, probe_text, reason_line, run_logged, run_meta,
                       run_processes, run_round, spread, warn_if_busy, warn_if_busy_after)

REPO_ROOT = os.path.dirname(HERE)
WORKER = os.path.join(HERE, "jax_peers", "jax_worker.py")
DEFAULT_MPI4JAX_PYTHON = os.path.join(REPO_ROOT, ".venv-mpi4jax", "bin", "python")
MPIRUN = "mpirun.openmpi"

PEERS = ("hvda", "mpi4jax", "mpi4py", "ideal")
LABEL = {"hvda": "horovod_accel", "mpi4jax": "mpi4jax", "mpi4py": "mpi4py (numpy)",
         "ideal": "ideal"}
COMPARED = ("mpi4jax", "mpi4py")  # the ratio columns: hvda against these

DEFAULT_SIZES = [4 * KIB, 1 * MIB, 16 * MIB, 64 * MIB]
SMOKE_SIZES = [4 * KIB, 1 * MIB]
# The MLP: 3.2 M parameters, 12.6 MB of float32 gradients in 8 leaves.
DEFAULT_WIDTHS = [1024, 1024, 1024, 1024, 10]
SMOKE_WIDTHS = [256, 256, 10]
DEFAULT_XLA_FLAGS = "--xla_cpu_multi_thread_eigen=false"
CHAIN_OPS = 8
LOADED = 1.0  # load average above which the run is flagged


# ---------------------------------------------------------------- plan

def make_plan(a):
    """The workers' config: per size [bytes, timed iterations, warm-up
    iterations] (iterations shrink with size so each size moves about the
    same bytes), and the train step's model, batch and iteration counts."""
    budget, lo, hi = (16 * MIB, 5, 30) if a.smoke else (1024 * MIB, 10, 300)
    sizes = []
    for nbytes in a.sizes:
        iters = max(lo, min(hi, budget // nbytes))
        sizes.append([nbytes, iters, max(2, min(10, iters // 8))])
    chain = None if a.no_chain else {"bytes": 4 * KIB, "ops": CHAIN_OPS,
                                     "iters": 30 if a.smoke else 200,
                                     "warmup": 3 if a.smoke else 10}
    train = None if a.no_train else {"widths": a.widths, "batch": a.batch, "iters": a.train_iters,
                                     "warmup": a.train_warmup, "lr": 0.01}
    return {"sizes": sizes, "chain": chain, "train": train}


# ---------------------------------------------------------------- jobs

def peer_env(a):
    env = job_env()  # PYTHONPATH=<repo>, OMP_NUM_THREADS=1
    env["JAX_PLATFORMS"] = "cpu"
    env["XLA_FLAGS"] = a.xla_flags
    env["MPI4JAX_NO_WARN_JAX_VERSION"] = "1"
    return env


def peer_python(peer, a):
    return a.mpi4jax_python if peer == "mpi4jax" else sys.executable


PREFLIGHT_IMPORT = {
    # Attribute look-ups too: a half-written package can import as an empty namespace.
    "hvda": "import horovod_accel.jax as h; h.init, h.allreduce, h.grouped_allreduce, h.Sum",
    "mpi4jax": "import jax, mpi4jax; from mpi4py import MPI",
    "mpi4py": "import jax; from mpi4py import MPI",
    "ideal": "import jax",
}


def preflight(peer, a, env):
    """None if `peer` can run here, else a one-line reason (what to do)."""
    if peer in ("mpi4jax", "mpi4py") and shutil.which(MPIRUN) is None:
        return f"{MPIRUN} not found on PATH (Debian's openmpi-bin)"
    py = peer_python(peer, a)
    if not os.path.exists(py):
        return f"no {py}: run scripts/setup_mpi4jax.sh (or pass --mpi4jax-python)"
    try:
        p = subprocess.run([py, "-c", PREFLIGHT_IMPORT[peer]], env=env, cwd=REPO_ROOT,
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return f"'{PREFLIGHT_IMPORT[peer]}' took over 120 s"
    if p.returncode != 0:
        hint = " (scripts/setup_mpi4jax.sh builds it)" if peer == "mpi4jax" else ""
        return reason_line(p.stderr) + hint
    return None


def launcher_cmd(peer, a, args):
    """The command line that starts one job of `peer` (not ideal) on a.np ranks."""
    py = peer_python(peer, a)
    if peer == "hvda":
        return ([sys.executable, "-m", "horovod_accel.runner.launch", "-np", str(a.np)]
                + shlex.split(a.hvda_args) + [py, WORKER, "--peer", peer] + args)
    return ([MPIRUN, "-np", str(a.np), "--allow-run-as-root", "--oversubscribe"]
            + shlex.split(a.mpi_args) + [py, WORKER, "--peer", peer] + args)


def read_json(path):
    with open(path) as f:
        return json.load(f)


def combine_ideal(parts):
    """One result from the ideal processes' own: samples/s is their sum (each
    ran its own batch at its own pace), the step time their median's median."""
    trains = [p["train"] for p in parts]
    out = dict(parts[0])
    out["train"] = {"samples_per_s": sum(t["samples_per_s"] for t in trains),
                    "median_s": statistics.median(t["median_s"] for t in trains),
                    "p10_s": min(t["p10_s"] for t in trains),
                    "p90_s": max(t["p90_s"] for t in trains),
                    "per_process": [{k: v for k, v in t.items() if k != "iter_s"} for t in trains]}
    return out


def run_peer_once(peer, a, cfg_path, workdir, env, tag):
    """One job of `peer`; returns (result or None, None or reason, output tail)."""
    prefix = os.path.join(workdir, tag)
    t0 = time.monotonic()
    if peer == "ideal":
        outs = [f"{prefix}.{i}.json" for i in range(a.np)]
        cmds = [([sys.executable, WORKER, "--peer", "ideal", "--index", str(i), "--count",
                  str(a.np), "--config", cfg_path, "--out", out], env)
                for i, out in enumerate(outs)]
        rcs, log = run_processes(cmds, prefix + ".log", a.timeout, a.verbose)
        rc = None if None in rcs else max(rcs)
    else:
        outs = [prefix + ".json"]
        cmd = launcher_cmd(peer, a, ["--config", cfg_path, "--out", outs[0]])
        rc, log = run_logged(cmd, prefix + ".log", env, a.timeout, a.verbose)
    wall = time.monotonic() - t0
    tail = "\n".join(log.splitlines()[-15:])
    if rc is None:
        return None, f"timed out after {a.timeout:.0f} s", tail
    if rc != 0:
        return None, f"exit code {rc}: {reason_line(log)}", tail
    try:
        parts = [read_json(p) for p in outs]
    except (OSError, ValueError) as e:
        return None, f"no result file ({e.__class__.__name__})", tail
    result = combine_ideal(parts) if peer == "ideal" else parts[0]
    result["job_wall_s"] = wall
    return result, None, tail


def run_peer(peer, a, cfg_path, workdir, env, tag):
    """run_peer_once, retried once on failure (a launcher can fail to start
    on a loaded 2-core host); the reason of the last failure otherwise."""
    for attempt in (1, 2):
        result, reason, tail = run_peer_once(peer, a, cfg_path, workdir, env, f"{tag}.{attempt}")
        if result:
            return result, None, tail
        if attempt == 1:
            print(f"[{peer}: {reason}; retrying once]", end=" ", flush=True)
    return None, reason, tail


# ---------------------------------------------------------------- report

def time_unit(nbytes):
    return ("us", 1e6) if nbytes <= 1 * MIB else ("ms", 1e3)


IN_JIT = ("hvda", "mpi4jax")  # peers whose ops run inside jax.jit (donation applies)
COMMUNICATING = ("hvda", "mpi4jax", "mpi4py")


def table_rows(results, a):
    """[(metric, better, {peer: (median, p10, p90) or None}, peers the row is
    for)]; better: 'low' (times) or 'high' (samples/s)."""
    def stat(peer, *path):
        r = results.get(peer)
        for k in path:
            if not isinstance(r, dict) or k not in r:
                return None
            r = r[k]
        return r

    def times(scale, *path):
        out = {}
        for p in PEERS:
            s = stat(p, *path)
            out[p] = None if s is None else tuple(s[k] * scale
                                                  for k in ("median_s", "p10_s", "p90_s"))
        return out

    rows = []
    for key, label, peers in (("allreduce_donated", "in place (donated)", IN_JIT),
                              ("allreduce", "out of place", COMMUNICATING)):
        for n in a.sizes:
            unit, scale = time_unit(n)
            rows.append((f"allreduce {human_size(n)} {label}, median ({unit})", "low",
                         times(scale, key, str(n)), peers))
    if not a.no_chain:
        rows.append((f"{CHAIN_OPS} dependent 4 KiB allreduces in one call, median (us)",
                     "low", times(1e6, "chain"), COMMUNICATING))
    if not a.no_train:
        vals = {}
        for p in PEERS:
            t = stat(p, "train")
            # samples/s at the median step, and at the p90 and p10 steps (slow, fast).
            vals[p] = None if t is None else (t["samples_per_s"],
                                              t["samples_per_s"] * t["median_s"] / t["p90_s"],
                                              t["samples_per_s"] * t["median_s"] / t["p10_s"])
        params = sum(x * y + y for x, y in zip(a.widths[:-1], a.widths[1:]))
        rows.append((f"train step, MLP {params / 1e6:.1f} M params, batch {a.batch}/rank "
                     "(samples/s)", "high", vals, PEERS))
    return rows


def ratio(better, h, o):
    """Same-run ratio, > 1 when horovod_accel is better; None if either is missing."""
    if not h or not o:
        return None
    return h / o if better == "high" else o / h


def pct_ideal(v, ideal):
    return None if not v or not ideal else v / ideal


COLUMNS = ([LABEL[p] for p in PEERS] + [f"hvda/{p}" for p in COMPARED]
           + ["hvda % ideal", "mpi4jax % ideal"])


def _cells(better, meds, peers, value_cell, ratio_cell, pct_cell):
    """The cells right of the metric: a value per peer, hvda's ratio against
    each compared peer, % of ideal (samples/s rows); '' where the row is not
    for that peer."""
    cells = [value_cell(p) if p in peers else "" for p in PEERS]
    cells += [ratio_cell([ratio(better, m["hvda"], m[p]) for m in meds]) if p in peers else ""
              for p in COMPARED]
    cells += [pct_cell([pct_ideal(m[p], m["ideal"]) for m in meds]) if better == "high" else ""
              for p in ("hvda", "mpi4jax")]
    return cells


def render_round(results, a):
    """One round: each peer's median [p10..p90] and the same-run ratios."""
    body = []
    for metric, better, vals, peers in table_rows(results, a):
        med = {p: (vals[p][0] if vals[p] else None) for p in PEERS}
        body.append([metric] + _cells(
            better, [med], peers,
            lambda p: "n/a" if vals[p] is None else
            f"{fmt(vals[p][0])} [{fmt(vals[p][1])}..{fmt(vals[p][2])}]",
            lambda rs: "n/a" if rs[0] is None else f"{rs[0]:.2f}x",
            lambda rs: "n/a" if rs[0] is None else f"{100 * rs[0]:.0f}%"))
    return _layout(["metric"] + COLUMNS, body)


def render_summary(rounds, a):
    """Over R rounds: each peer's median value; each same-run ratio's median
    [min..max] (the numbers to quote)."""
    per_round = [table_rows(results, a) for results in rounds]
    body = []
    for i, (metric, better, _, peers) in enumerate(per_round[0]):
        meds = [{p: (r[i][2][p][0] if r[i][2][p] else None) for p in PEERS} for r in per_round]

        def value(p):
            vals = [m[p] for m in meds if m[p] is not None]
            return fmt(statistics.median(vals)) if vals else "n/a"
        body.append([metric] + _cells(better, meds, peers, value, spread,
                                      lambda rs: spread(rs, pct=True)))
    return _layout(["metric"] + [f"{c} (median)" for c in COLUMNS[:len(PEERS)]]
                   + COLUMNS[len(PEERS):], body)


# ---------------------------------------------------------------- main

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--np", type=int, default=2, help="ranks per job (default 2)")
    p.add_argument("--only", default=",".join(PEERS),
                   help=f"comma list of peers from {','.join(PEERS)} (default: all)")
    p.add_argument("--sizes", type=lambda s: [parse_size(x) for x in s.split(",") if x],
                   help="comma list of allreduce sizes (default 4K,1M,16M,64M; --smoke 4K,1M)")
    p.add_argument("--widths", type=lambda s: [int(x) for x in s.split(",")],
                   help="MLP layer sizes, input first, classes last (default "
                        f"{','.join(map(str, DEFAULT_WIDTHS))}; --smoke "
                        f"{','.join(map(str, SMOKE_WIDTHS))})")
    p.add_argument("--batch", type=int, help="train batch per rank (default 32; --smoke 8)")
    p.add_argument("--train-iters", type=int, help="timed train steps (default 60; --smoke 10)")
    p.add_argument("--train-warmup", type=int, help="untimed train steps (default 5; --smoke 2)")
    p.add_argument("--no-train", action="store_true", help="no train step row")
    p.add_argument("--no-chain", action="store_true",
                   help=f"no row of {CHAIN_OPS} dependent 4 KiB allreduces in one jitted call")
    p.add_argument("--repeats", type=int,
                   help="run the whole comparison R times, interleaved, and report each ratio's "
                        "median and range over the rounds (default 3; --smoke 1)")
    p.add_argument("--smoke", action="store_true",
                   help="tiny sizes, a small MLP, few iterations, one round (< 1 min)")
    p.add_argument("--timeout", type=float, help="hard limit per job in seconds (default 300; "
                                                 "--smoke 120)")
    p.add_argument("--json", metavar="PATH", help="also write the raw numbers here")
    p.add_argument("--mpi4jax-python", default=DEFAULT_MPI4JAX_PYTHON,
                   help="interpreter with mpi4jax (default <repo>/.venv-mpi4jax/bin/python, made "
                        "by scripts/setup_mpi4jax.sh)")
    p.add_argument("--hvda-args", default="", help="extra horovodrun arguments")
    p.add_argument("--mpi-args", default="",
                   help="extra mpirun.openmpi arguments, e.g. '--bind-to none' (default: none, "
                        "so Open MPI binds each rank to a core, its default at np <= 2)")
    p.add_argument("--xla-flags", default=DEFAULT_XLA_FLAGS,
                   help=f"XLA_FLAGS of every job (default '{DEFAULT_XLA_FLAGS}': one compute "
                        "thread per process, as the torch benchmarks' set_num_threads(1))")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print commands and job output tails")
    a = p.parse_args(argv)
    a.only = [x.strip() for x in a.only.split(",") if x.strip()]
    bad = [x for x in a.only if x not in PEERS]
    if bad:
        p.error(f"--only: unknown peer(s) {bad}; choose from {','.join(PEERS)}")
    if "hvda" not in a.only:
        p.error("--only must include hvda: every ratio is against it")
    if a.np < 1:
        p.error("--np must be >= 1")
    a.sizes = a.sizes if a.sizes is not None else (SMOKE_SIZES if a.smoke else DEFAULT_SIZES)
    a.widths = a.widths or (SMOKE_WIDTHS if a.smoke else DEFAULT_WIDTHS)
    if len(a.widths) < 2 or min(a.widths) < 1:
        p.error(f"--widths needs at least two positive layer sizes, got {a.widths}")
    a.batch = a.batch or (8 if a.smoke else 32)
    a.train_iters = a.train_iters or (10 if a.smoke else 60)
    a.train_warmup = a.train_warmup if a.train_warmup is not None else (2 if a.smoke else 5)
    a.repeats = a.repeats or (1 if a.smoke else 3)
    a.timeout = a.timeout or (120.0 if a.smoke else 300.0)
    if min(a.batch, a.train_iters, a.repeats) < 1:
        p.error("--batch, --train-iters and --repeats must be >= 1")
    if a.no_train and a.no_chain and not a.sizes:
        p.error("nothing to measure: --no-train, --no-chain and no --sizes")
    return a


def main(argv=None):
    a = parse_args(argv)
    cfg = make_plan(a)
    env = peer_env(a)
    meta = run_meta(a)
    meta.update(xla_flags=a.xla_flags, mpi_args=a.mpi_args)
    print(f"JAX collectives benchmark: np={a.np}, {os.cpu_count()} CPUs, peers: "
          f"{','.join(a.only)}; load {meta['loadavg_before']:.2f}")
    warn_if_busy(meta)
    if meta["loadavg_before"] > LOADED:
        print(f"WARNING: load average {meta['loadavg_before']:.2f}: with other processes "
              "runnable, MPI's busy-polling ranks lose whole scheduler slices (16-40 ms per op "
              "seen here); wait for a quiet host (README)", file=sys.stderr)

    errors, failed_jobs, rounds = {}, [], []
    runnable = []
    for peer in PEERS:
        if peer not in a.only:
            continue
        reason = preflight(peer, a, env)
        if reason:
            errors[peer] = reason
            print(f"{LABEL[peer]}: n/a ({reason})")
        else:
            runnable.append(peer)
    meta["cross_cpu_gbps"] = []
    with tempfile.TemporaryDirectory(prefix="hvda_jax_bench_") as workdir:
        cfg_path = os.path.join(workdir, "config.json")
        with open(cfg_path, "w") as f:
            json.dump(cfg, f)
        for rnd in range(a.repeats):
            order = runnable if rnd % 2 == 0 else runnable[::-1]
            print(f"round {rnd + 1}/{a.repeats}")
            meta.setdefault("loadavg_per_round", []).append(os.getloadavg()[0])
            results, failures, probes = run_round(
                order, LABEL,
                lambda peer: run_peer(peer, a, cfg_path, workdir, env, f"r{rnd}.{peer}"),
                a.verbose)
            errors.update(failures)
            failed_jobs += [(rnd + 1, peer, reason) for peer, reason in failures.items()]
            rounds.append(results)
            meta["cross_cpu_gbps"].append(probes)
    end_meta(meta)

    print()
    print("Per iteration: the max over ranks of each rank's time (jitted call + "
          "block_until_ready); median [p10..p90] over iterations.")
    print("Ratios: > 1 favours horovod_accel (time rows: peer/hvda; samples/s rows: hvda/peer). "
          "% ideal: samples/s against N independent processes without communication.")
    for rnd, results in enumerate(rounds):
        if a.repeats > 1:
            print(f"\nround {rnd + 1} (load average at start "
                  f"{meta['loadavg_per_round'][rnd]:.2f}; cross-CPU hand-off before/after: "
                  f"{probe_text(meta['cross_cpu_gbps'][rnd])}):")
        print(render_round(results, a))
    if a.repeats > 1:
        print(f"\nover {a.repeats} rounds: each peer's median value; each same-run ratio's median "
              "[min..max] (quote these):")
        print(render_summary(rounds, a))
    for p in PEERS:
        if p in errors:
            print(f"{LABEL[p]}: n/a ({errors[p]})")
    warn_if_busy_after(meta)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": meta, "config": cfg, "rounds": rounds, "errors": errors,
                       "failed_jobs": failed_jobs}, f, indent=1)
    # Fails when horovod_accel did not run in every round, or a peer that could
    # start (its imports worked) failed: a missing optional peer does not.
    if "hvda" in errors or failed_jobs:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
