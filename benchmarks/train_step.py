#!/usr/bin/env python
"""Training-step throughput: horovod_accel DistributedOptimizer against torch
DDP (gloo) and the no-communication "ideal", measured back to back in one run.
With --framework tf: Keras model.fit with horovod.tensorflow.keras against
tf.distribute.MultiWorkerMirroredStrategy and "ideal" (see tf_jobs below).

    .venv/bin/python benchmarks/train_step.py                  # mlp + cnn, np 1 and 2
    .venv/bin/python benchmarks/train_step.py --quick          # smoke run
    .venv/bin/python benchmarks/train_step.py --models mlp --np 2 --repeats 3 --json out.json
    .venv/bin/python benchmarks/train_step.py --framework tf   # Keras, mlp + cnn, np 2
    .venv/bin/python benchmarks/train_step.py --compile --np 2 --models mlp,cnn --repeats 3
    .venv/bin/python benchmarks/train_step.py --compile --quick --np 2 --overlap-report
    .venv/bin/python benchmarks/train_step.py --compile --no-eager --hvda-compile-backend horovod

Per model and rank count N, jobs (all workers: train_peers/train_worker.py,
one thread per process, the same SGD step on a fixed random batch):
  ideal  N independent `--mode local` processes started at once (N=1: one process)
  hvda   python -m horovod_accel.runner.launch -np N python train_worker.py --mode hvda
  ddp    python -m torch.distributed.run --nproc_per_node N train_worker.py --mode ddp
Throughput = N x batch / median over iterations (after warm-up) of the
per-iteration time, max over ranks (ideal: the sum of each process's own).
hvda and ddp alternate over --repeats runs; the table shows the median run.
See benchmarks/README.md.

--compile adds rows "<model>+compile" measured in the same run: every worker
puts the model under torch.compile (inductor): torch.compile(model) with hvd.
DistributedOptimizer for hvda and for ideal, torch.compile(DDP(model)) for ddp
(dynamo's DDPOptimizer). Each compiled job gets a fresh inductor cache (so its
first step is a cold compile, reported as "first step") and
TORCHINDUCTOR_COMPILE_THREADS=1; the warm-up steps absorb compilation. Within
a repeat the (eager/compiled, peer) jobs run back to back, in reverse order
every other repeat; --no-eager drops the eager rows. The table then shows
medians over repeats and the same-repeat ratio hvda/DDP as median [min..max].
--overlap-report: hvda jobs also measure, after their timed loop, when
gradients become ready within backward and how much of the allreduce time is
hidden (train_peers/overlap_report.py); one table, medians over repeats.

--framework tf (workers: train_peers/keras_worker.py, the same two models in
Keras, model.fit, one intra-op thread per process):
  ideal  N independent `--mode local` processes started at once
  mwms   N `--mode mwms` processes, TF_CONFIG for a cluster of N workers on
         127.0.0.1 (RING collectives on CPU; global batch = N x batch)
  hvda   python -m horovod_accel.runner.launch -np N python keras_worker.py --mode hvda
Each process times every step (Keras callback, batch begin to end); the driver
takes the max over ranks per step, then the median over steps. All three run
in every repeat (order of mwms and hvda alternating); the table shows medians
over repeats and the same-repeat ratio hvda/MWMS as median [min..max].
"""
import argparse
import json
import os
import shlex
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# Process handling shared with the allreduce benchmark.
from allreduce import (busy_processes, free_port, job_env, reason_line,  # noqa: E402
                       run_processes, spread)

WORKER = os.path.join(HERE, "train_peers", "train_worker.py")
KERAS_WORKER = os.path.join(HERE, "train_peers", "keras_worker.py")
PEERS = ("ideal", "ddp", "hvda")
TF_PEERS = ("ideal", "mwms", "hvda")
BATCH = {"mlp": 64, "cnn": 32}


def worker_args(a, model, out, variant="eager"):
    return (["--model", model, "--batch-size", str(BATCH[model]), "--iters", str(a.iters),
             "--warmup", str(a.warmup), "--out", out]
            + (["--compile"] if variant == "compile" else []))


def row_label(model, variant):
    """Table/JSON key of a model's rows: 'mlp' (eager) or 'mlp+compile'."""
    return model if variant == "eager" else f"{model}+compile"


def tf_jobs(peer, a, model, n, workdir, tag):
    """--framework tf: ([(command, extra env)], [result path per rank])."""
    py = sys.executable
    prefix = os.path.join(workdir, tag)
    outs = [f"{prefix}.{i}.json" for i in range(n)]
    args = ["--model", model, "--batch-size", str(BATCH[model]), "--iters", str(a.iters),
            "--warmup", str(a.warmup), "--out-prefix", prefix]
    if peer == "ideal":
        return [([py, KERAS_WORKER, "--mode", "local", "--index", str(i)] + args, {})
                for i in range(n)], outs
    if peer == "hvda":
        return [([py, "-m", "horovod_accel.runner.launch", "-np", str(n)]
                 + shlex.split(a.hvda_args) + [py, KERAS_WORKER, "--mode", "hvda"] + args,
                 {})], outs
    workers = [f"127.0.0.1:{free_port()}" for _ in range(n)]
    cmd = [py, KERAS_WORKER, "--mode", "mwms", "--comm", a.mwms_comm] + args
    return [(cmd, {"TF_CONFIG": json.dumps({"cluster": {"worker": workers},
                                            "task": {"type": "worker", "index": i}})})
            for i in range(n)], outs


def tf_rate(peer, outs):
    """samples/s of a finished --framework tf job, and its first rank's result."""
    rs = []
    for out in outs:
        with open(out) as f:
            rs.append(json.load(f))
    if peer == "ideal":
        return sum(r["batch_size"] / statistics.median(r["iter_s"]) for r in rs), rs[0]
    sums = [r["weights_sum"] for r in rs]
    if max(sums) - min(sums) > 1e-6 * max(1.0, abs(sums[0])):
        raise ValueError(f"ranks ended with different weights (sums {sums})")
    step_max = [max(ts) for ts in zip(*(r["iter_s"] for r in rs))]
    return len(rs) * rs[0]["batch_size"] / statistics.median(step_max), rs[0]


def job_cmds(peer, a, model, n, workdir, tag, variant="eager"):
    """[(command, result path)]: one launcher, or n local processes for ideal."""
    py = sys.executable
    if peer == "ideal":
        outs = [os.path.join(workdir, f"{tag}.{i}.json") for i in range(n)]
        return [([py, WORKER, "--mode", "local"] + worker_args(a, model, o, variant), o)
                for o in outs]
    out = os.path.join(workdir, f"{tag}.json")
    if peer == "hvda":
        extra = ["--bucket-mb", str(a.bucket_mb)] if a.bucket_mb is not None else []
        extra += ["--overlap-report"] if a.overlap_report else []
        extra += ["--compile-backend", a.hvda_compile_backend] if variant == "compile" else []
        cmd = ([py, "-m", "horovod_accel.runner.launch", "-np", str(n)] + shlex.split(a.hvda_args)
               + [py, WORKER, "--mode", "hvda"] + extra)
    else:
        cmd = [py, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", str(n),
               "--master_addr", "127.0.0.1", "--master_port", str(free_port()), WORKER,
               "--mode", "ddp"]
    return [(cmd + worker_args(a, model, out, variant), out)]


def run_job(peer, a, model, n, workdir, tag, env, variant="eager"):
    """Runs one job; returns (samples/s or None, reason or None, info): info is
    the first process's first_step_s, graphs and overlap (see
    train_peers/train_worker.py); {} for --framework tf and failed jobs."""
    log_path = os.path.join(workdir, f"{tag}.log")
    if a.framework == "tf":
        cmds, outs = tf_jobs(peer, a, model, n, workdir, tag)
    else:
        extra = {}
        if variant == "compile":        # a cold compile per job, one compile process
            extra = {"TORCHINDUCTOR_CACHE_DIR": os.path.join(workdir, f"inductor.{tag}"),
                     "TORCHINDUCTOR_COMPILE_THREADS": "1"}
        cmds = [(cmd, extra) for cmd, _ in job_cmds(peer, a, model, n, workdir, tag, variant)]
    rcs, text = run_processes([(cmd, dict(env, **extra_env)) for cmd, extra_env in cmds],
                              log_path, a.timeout, a.verbose)
    if None in rcs:
        return None, f"timed out after {a.timeout:.0f} s", {}
    if any(rcs):
        print("\n".join("    | " + l for l in text.splitlines()[-15:]), file=sys.stderr)
        return None, f"exit code {max(rcs)}: {reason_line(text)}", {}
    if a.framework == "tf":
        try:
            rate, first = tf_rate(peer, outs)
        except (OSError, ValueError) as e:
            return None, f"{e.__class__.__name__}: {e}", {}
        a.jit_compile_seen.add(first["jit_compile"])
        return rate, None, {}
    rate, info = 0.0, {}
    for i, (_, out) in enumerate(job_cmds(peer, a, model, n, workdir, tag, variant)):
        with open(out) as f:
            r = json.load(f)
        rate += r["size"] * r["batch_size"] / statistics.median(r["iter_s"])
        if i == 0 and "warmup_s" in r:
            info = {"first_step_s": r["warmup_s"][0] if r["warmup_s"] else None,
                    "graphs": r["graphs"], "overlap": r["overlap"]}
    return rate, None, info


def fmt_ratio(x, y, pct=False):
    if not x or not y:
        return "n/a"
    return f"{100 * x / y:.0f}%" if pct else f"{x / y:.2f}x"


def markdown_table(cols, body):
    """A padded markdown table of header `cols` and rows `body` (strings)."""
    widths = [max(len(r[i]) for r in [cols] + body) for i in range(len(cols))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    return "\n".join([line(cols), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
                     + [line(r) for r in body])


def render(rows):
    cols = ["model", "np", "grads", "batch/rank", "ideal (samples/s)", "DDP gloo", "horovod_accel",
            "hvda/DDP", "DDP % ideal", "hvda % ideal"]
    body = []
    for (model, n), v in rows.items():
        f = lambda x: "n/a" if x is None else f"{x:.0f}"  # noqa: E731
        body.append([model, str(n), {"mlp": "42 MB", "cnn": "3.1 MB"}[model], str(BATCH[model]),
                     f(v.get("ideal")), f(v.get("ddp")), f(v.get("hvda")),
                     fmt_ratio(v.get("hvda"), v.get("ddp")),
                     fmt_ratio(v.get("ddp"), v.get("ideal"), True),
                     fmt_ratio(v.get("hvda"), v.get("ideal"), True)])
    return markdown_table(cols, body)


def render_compiled(by_rep, runs, infos):
    """--compile table: eager and compiled rows, samples/s medians over repeats,
    same-repeat ratio hvda/DDP (vs ideal: its one run), first-step seconds."""
    cols = ["model", "np", "batch/rank", "ideal (samples/s)", "DDP gloo", "horovod_accel",
            "hvda/DDP", "DDP % ideal", "hvda % ideal", "first step s (ideal/DDP/hvda)"]
    body = []
    for key, reps in by_rep.items():
        med = {p: statistics.median(v) for p, v in runs.get(key, {}).items()}
        ideal = med.get("ideal")
        same_rep = {p: [r.get(p) for r in reps.values()] for p in PEERS}
        first = [[i["first_step_s"] for i in infos.get(key, {}).get(p, [])
                  if i.get("first_step_s") is not None] for p in PEERS]
        body.append([key[0], str(key[1]), str(BATCH[key[0].split("+")[0]]), _rate(ideal),
                     _rate(med.get("ddp")), _rate(med.get("hvda")),
                     spread(_ratios(same_rep["hvda"], same_rep["ddp"])),
                     spread(_ratios(same_rep["ddp"], [ideal] * len(reps)), True),
                     spread(_ratios(same_rep["hvda"], [ideal] * len(reps)), True),
                     "/".join(f"{statistics.median(v):.1f}" if v else "-" for v in first)])
    return markdown_table(cols, body)


def _rate(x):
    return "n/a" if x is None else f"{x:.0f}"


def _ratios(xs, ys):
    """x / y for the pairs where both exist."""
    return [x / y for x, y in zip(xs, ys) if x and y]


OVERLAP_COLS = [  # (column, overlap_report key, format)
    ("buckets", "buckets", "{:.0f}"),
    ("1st grad ready (% of bwd)", "first_ready_pct", "{:.0f}%"),
    ("1st allreduce submitted (% of bwd)", "first_submit_pct", "{:.0f}%"),
    ("bwd ms", "bwd_ms", "{:.1f}"),
    ("step ms (wait+SGD)", "step_ms", "{:.1f}"),
    ("bwd alone ms", "bwd_only_ms", "{:.1f}"),
    ("SGD alone ms", "sgd_ms", "{:.1f}"),
    ("allreduce alone ms", "comm_only_ms", "{:.1f}"),
    ("exposed ms", "exposed_ms", "{:.1f}"),
    ("hidden", "hidden_pct", "{:.0f}%"),
]


def render_overlap(infos):
    """--overlap-report table: per row, medians over the hvda jobs' reports."""
    cols = ["model", "np"] + [c for c, _, _ in OVERLAP_COLS]
    body = []
    for (label, n), peers in infos.items():
        reports = [i["overlap"] for i in peers.get("hvda", []) if i.get("overlap")]
        if reports:
            body.append([label, str(n)] + [fmt.format(statistics.median(r[k] for r in reports))
                                           for _, k, fmt in OVERLAP_COLS])
    return markdown_table(cols, body)


def render_tf(by_rep):
    """--framework tf table: samples/s medians over repeats, same-repeat ratios."""
    cols = ["model", "np", "batch/rank", "ideal (samples/s)", "MWMS", "hvda", "hvda/MWMS",
            "MWMS % ideal", "hvda % ideal"]
    body = []
    for (model, n), reps in by_rep.items():
        def med(peer):
            v = [r[peer] for r in reps.values() if peer in r]
            return f"{statistics.median(v):.0f}" if v else "n/a"

        def ratios(x, y):
            return [r[x] / r[y] for r in reps.values() if x in r and y in r]
        body.append([model, str(n), str(BATCH[model]), med("ideal"), med("mwms"), med("hvda"),
                     spread(ratios("hvda", "mwms")), spread(ratios("mwms", "ideal"), True),
                     spread(ratios("hvda", "ideal"), True)])
    return markdown_table(cols, body)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--framework", choices=["torch", "tf"], default="torch",
                   help="torch: DDP vs hvda; tf: Keras model.fit, MWMS vs hvda")
    p.add_argument("--models", default="mlp,cnn", help="comma list from mlp,cnn")
    p.add_argument("--np", help="comma list of rank counts (default 1,2; tf: 2)")
    p.add_argument("--only", help="comma list from ideal,ddp,hvda (tf: ideal,mwms,hvda)")
    p.add_argument("--mwms-comm", choices=["RING", "AUTO"], default="RING",
                   help="tf: MWMS CommunicationImplementation (AUTO is RING on CPU)")
    p.add_argument("--iters", type=int, help="timed iterations per job (default 40; --quick 8)")
    p.add_argument("--warmup", type=int, help="untimed iterations first (default 5; --quick 2)")
    p.add_argument("--repeats", type=int, help="runs of each peer, alternating (default 3; --quick 1)")
    p.add_argument("--quick", action="store_true", help="smoke run: few iterations, one repeat")
    p.add_argument("--bucket-mb", type=float, help="hvda DistributedOptimizer bucket cap (MiB)")
    p.add_argument("--compile", action="store_true",
                   help="torch: add torch.compile'd rows (<model>+compile) to the same run")
    p.add_argument("--no-eager", action="store_true", help="with --compile: compiled rows only")
    p.add_argument("--hvda-compile-backend", default="inductor",
                   help="with --compile: hvda's torch.compile backend; 'horovod' splits the graph "
                        "at bucket boundaries (allreduces overlap the backward); the others "
                        "always use inductor")
    p.add_argument("--overlap-report", action="store_true",
                   help="torch: hvda jobs report gradient readiness and hidden communication")
    p.add_argument("--hvda-args", default="", help="extra horovodrun arguments")
    p.add_argument("--timeout", type=float, default=300.0, help="hard limit per job (s)")
    p.add_argument("--json", metavar="PATH", help="also write every run's numbers here")
    p.add_argument("-v", "--verbose", action="store_true")
    a = p.parse_args(argv)
    a.peers = TF_PEERS if a.framework == "tf" else PEERS
    a.models = [m for m in a.models.split(",") if m]
    a.np = [int(n) for n in (a.np or ("2" if a.framework == "tf" else "1,2")).split(",") if n]
    a.only = [x for x in (a.only or ",".join(a.peers)).split(",") if x]
    for m in a.models:
        if m not in BATCH:
            p.error(f"--models: unknown model {m!r}")
    for x in a.only:
        if x not in a.peers:
            p.error(f"--only: unknown peer {x!r}")
    if a.framework == "tf" and a.bucket_mb is not None:
        p.error("--bucket-mb applies to --framework torch only")
    if a.framework == "tf" and (a.compile or a.overlap_report):
        p.error("--compile and --overlap-report apply to --framework torch only")
    if a.no_eager and not a.compile:
        p.error("--no-eager needs --compile")
    a.variants = (["eager"] if not a.no_eager else []) + (["compile"] if a.compile else [])
    a.jit_compile_seen = set()
    a.iters = a.iters or (8 if a.quick else 40)
    a.warmup = a.warmup or (2 if a.quick else 5)
    if a.compile and a.warmup < 2:
        p.error("--compile needs --warmup 2 or more (the first step compiles)")
    a.repeats = a.repeats or (1 if a.quick else 3)
    return a


def main(argv=None):
    a = parse_args(argv)
    env = job_env()
    load = os.getloadavg()[0]
    print(f"train_step benchmark{' (tf/keras)' if a.framework == 'tf' else ''}: "
          f"models {','.join(a.models)}, np {a.np}, {os.cpu_count()} CPUs, "
          f"{a.iters} iterations after {a.warmup} warm-up, {a.repeats} repeat(s)"
          f"{'; eager and compiled' if a.compile and not a.no_eager else ''}"
          f"{'; compiled' if a.no_eager else ''}; load {load:.2f}")
    if busy_processes():
        print("WARNING: build processes running: numbers will be noise", file=sys.stderr)
    runs, errors, by_rep, infos = {}, {}, {}, {}
    with tempfile.TemporaryDirectory(prefix="hvda_train_") as workdir:
        for model in a.models:
            for n in a.np:
                for rep in range(a.repeats):
                    pairs = [(v, p) for v in a.variants for p in a.peers if p in a.only]
                    order = [x for x in pairs if x[1] == "ideal"]
                    rest = [x for x in pairs if x[1] != "ideal"]
                    # alternate who goes first among the communicating peers (and variants)
                    order += list(reversed(rest)) if rep % 2 == 1 else rest
                    for variant, peer in order:
                        if peer == "ideal" and rep > 0 and a.framework == "torch":
                            continue        # no communication: one run is enough
                        label = row_label(model, variant)
                        tag = f"{label}.{n}.{peer}.{rep}"
                        t0 = time.monotonic()
                        rate, reason, info = run_job(peer, a, model, n, workdir, tag, env, variant)
                        if rate is None:        # one retry: a rare launcher failure is not a result
                            print(f"  {tag}: failed ({reason}); retrying once", flush=True)
                            errors[tag] = reason
                            rate, reason, info = run_job(peer, a, model, n, workdir, tag + ".retry",
                                                         env, variant)
                        print(f"  {tag}: " + (f"{rate:.1f} samples/s" if rate else f"n/a ({reason})")
                              + f" ({time.monotonic() - t0:.0f} s)", flush=True)
                        if rate:
                            runs.setdefault((label, n), {}).setdefault(peer, []).append(rate)
                            by_rep.setdefault((label, n), {}).setdefault(rep, {})[peer] = rate
                            if info:
                                infos.setdefault((label, n), {}).setdefault(peer, []).append(info)
                                graphs = info.get("graphs")
                                if variant == "compile" and graphs and graphs[0] == 0:
                                    print(f"  WARNING {tag}: dynamo compiled no graph", flush=True)
                                if graphs and graphs[1] != graphs[0]:
                                    print(f"  WARNING {tag}: compiled during the timed loop "
                                          f"(graphs {graphs[0]} -> {graphs[1]})", flush=True)
                        else:
                            errors[tag + ".retry"] = reason
    rows = {key: {peer: statistics.median(v) for peer, v in peers.items()}
            for key, peers in runs.items()}
    print()
    if a.framework == "tf":
        print(f"Keras model.fit; samples/s = np x batch / median step time (max over ranks); "
              f"ideal = np independent processes; median over repeats; ratios: same repeat, "
              f"median [min..max]. MWMS {a.mwms_comm}; jit_compile {sorted(a.jit_compile_seen)}; "
              f"load {load:.2f} at start, {os.getloadavg()[0]:.2f} at end.")
        print(render_tf(by_rep))
    elif a.compile:
        print("samples/s = np x batch / median per-iteration time (max over ranks); "
              "ideal = np independent processes, no communication (one run); median over "
              "repeats; ratios: same repeat, median [min..max]. +compile: torch.compile "
              "(inductor); first step = first warm-up step (cold compile), rank 0 / process 0; "
              f"load {load:.2f} at start, {os.getloadavg()[0]:.2f} at end.")
        print(render_compiled(by_rep, runs, infos))
    else:
        print("samples/s = np x batch / median per-iteration time (max over ranks); "
              "ideal = np independent processes, no communication; median over repeats.")
        print(render(rows))
    if a.overlap_report and infos:
        print()
        print("hvda overlap (train_peers/overlap_report.py): % of loss.backward()'s time at "
              "which the first gradient was ready / the first bucket's allreduce submitted; "
              "exposed = (bwd + step) - (bwd alone + SGD alone); hidden = 1 - exposed / "
              "allreduce alone; rank-averaged, median over repeats.")
        print(render_overlap(infos))
    if a.json:
        with open(a.json, "w") as f:
            out = {"argv": sys.argv, "load_before": load, "load_after": os.getloadavg()[0],
                   "runs": {f"{m}.{n}": v for (m, n), v in runs.items()},
                   "by_repeat": {f"{m}.{n}": v for (m, n), v in by_rep.items()},
                   "errors": errors}
            if a.compile or a.overlap_report:
                out["info"] = {f"{m}.{n}": v for (m, n), v in infos.items()}
            json.dump(out, f, indent=1)
    for tag, reason in errors.items():
        print(f"failed job {tag}: {reason}")
    return 0 if rows and all(len(v) == len(a.only) for v in runs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
