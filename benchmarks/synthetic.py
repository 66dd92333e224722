#!/usr/bin/env python
"""Upstream Horovod's own synthetic benchmarks, run through horovod_accel with
default settings, against their DDP and MultiWorkerMirroredStrategy twins
and the no-communication ideal, alternating, in one invocation.

    .venv/bin/python benchmarks/synthetic.py --horovod-repo PATH      # 3 rows, np 2, 3 repeats
    .venv/bin/python benchmarks/synthetic.py --horovod-repo PATH --rows torch --repeats 1
    .venv/bin/python benchmarks/synthetic.py --horovod-repo PATH --peers hvda,hvda-off,twin,ideal
    .venv/bin/python benchmarks/synthetic.py --horovod-repo PATH --torch-model resnet50 \
        --tf-model ResNet50 --batch-size 32 --np 8                    # a bigger machine

PATH is a horovod/horovod checkout or its git directory (e.g. the one the
workplace `fetch` tool gives); the scripts are read from it into a temporary
folder, never copied into this project. Rows (--rows):

  torch  examples/pytorch/pytorch_synthetic_benchmark.py, unchanged, through
         `horovodrun -np N python ...`; twin: synthetic_twins/
         pytorch_ddp_synthetic.py through `torchrun --nproc_per_node N`.
  tf2    examples/tensorflow2/tensorflow2_synthetic_benchmark.py (GradientTape
         loop); twin: synthetic_twins/tensorflow2_mwms_synthetic.py, N processes
         with TF_CONFIG.
  keras  examples/tensorflow2/tensorflow2_keras_synthetic_benchmark.py (model.fit);
         twin: synthetic_twins/tensorflow2_keras_mwms_synthetic.py.

The two TensorFlow scripts were written for Keras 2 and stop on Keras 3 (the
tf.keras of TensorFlow >= 2.16) at a line that is not Horovod's; each gets one
mechanical edit, applied to the temporary copy and printed with the table
(KERAS3_EDITS). With TF_USE_LEGACY_KERAS=1 and tf_keras installed the tf2
script runs unchanged instead (pass --legacy-keras for that row: the twin then
also runs on tf_keras).

Peers (--peers, default hvda,twin,ideal), each launched the way its users
launch it, with what a user's shell has: the driver removes OMP_NUM_THREADS
and the other thread variables (compute_threads.THREAD_VARIABLES) from the
environment it starts them in:
  hvda      upstream's script through horovodrun, no flags
  hvda-off  the same with --threads-per-rank off (the frameworks' own thread
            defaults: what upstream Horovod's users get)
  twin      DDP via torchrun (which sets OMP_NUM_THREADS=1 per process) or MWMS
  ideal     N twin processes with --no-communication started at once, each
            with the thread count horovodrun gives a rank: the compute alone
Throughput: the scripts' own "Total img/sec" line (rank 0's mean over the
timed iterations x N), the sum of the processes' rates for ideal. Ratios are
same-repeat, median [min..max] over repeats; > 1 favours the first peer.
"""
import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from allreduce import (REPO_ROOT, busy_processes, free_port, reason_line,  # noqa: E402
                       run_processes, spread)

sys.path.insert(0, REPO_ROOT)
from horovod_accel.common import compute_threads  # noqa: E402

TWINS = os.path.join(HERE, "synthetic_twins")
TORCHVISION_SHIM = os.path.join(TWINS, "torchvision_cpu")
UPSTREAM = {"torch": "examples/pytorch/pytorch_synthetic_benchmark.py",
            "tf2": "examples/tensorflow2/tensorflow2_synthetic_benchmark.py",
            "keras": "examples/tensorflow2/tensorflow2_keras_synthetic_benchmark.py"}
TWIN = {"torch": "pytorch_ddp_synthetic.py", "tf2": "tensorflow2_mwms_synthetic.py",
        "keras": "tensorflow2_keras_mwms_synthetic.py"}
TWIN_NAME = {"torch": "DDP", "tf2": "MWMS", "keras": "MWMS"}
# (old, new): the one edit each Keras-2-era script needs on Keras 3.
KERAS3_EDITS = {
    "tf2": ("opt.variables()", "opt.variables"),  # a property in Keras 3
    "keras": (",\n              experimental_run_tf_function=False)", ")"),  # no such argument
}
NUMBER = r"([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
TOTAL = re.compile(r"Total img/sec on (\d+) \w+\(s\): " + NUMBER)
PER_RANK = re.compile(r"Rank (\d+) img/sec per \w+: " + NUMBER)
WEIGHTS = re.compile(r"Rank (\d+) weights sum: " + NUMBER)


def upstream_script(repo, rel, dest_dir, row, legacy_keras):
    """Reads upstream's script `rel` from a checkout or git dir into dest_dir;
    returns (path, the edit applied or None)."""
    if os.path.isfile(os.path.join(repo, rel)):
        with open(os.path.join(repo, rel)) as f:
            text = f.read()
    else:
        r = subprocess.run(["git", "--git-dir", repo, "show", f"HEAD:{rel}"], capture_output=True,
                           text=True)
        if r.returncode != 0:
            sys.exit(f"synthetic.py: cannot read {rel} from {repo} (neither a checkout nor a git "
                     f"directory of horovod/horovod): {r.stderr.strip()}")
        text = r.stdout
    edit = None
    if row in KERAS3_EDITS and not (legacy_keras and row == "tf2"):
        old, new = KERAS3_EDITS[row]
        if text.count(old) != 1:
            sys.exit(f"synthetic.py: {rel} no longer contains {old!r} once; update KERAS3_EDITS")
        text, edit = text.replace(old, new), (" ".join(old.split()), " ".join(new.split()))
    path = os.path.join(dest_dir, os.path.basename(rel))
    with open(path, "w") as f:
        f.write(text)
    return path, edit


def base_env(legacy_keras):
    """A fresh user's environment: no thread variables, the repo importable
    as `horovod`, torchvision importable beside a CPU torch."""
    env = {k: v for k, v in os.environ.items()
           if k not in compute_threads.THREAD_VARIABLES and not k.startswith("HOROVOD_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO_ROOT, TORCHVISION_SHIM,
                                                    env.get("PYTHONPATH")) if p)
    env.setdefault("PYTHONUNBUFFERED", "1")
    env["TF_CPP_MIN_LOG_LEVEL"] = env.get("TF_CPP_MIN_LOG_LEVEL", "2")
    if legacy_keras:
        env["TF_USE_LEGACY_KERAS"] = "1"
    return env


def script_args(a, row):
    model = a.torch_model if row == "torch" else a.tf_model
    args = ["--model", model, "--batch-size", str(a.batch_size),
            "--num-batches-per-iter", str(a.batches_per_iter), "--num-iters", str(a.iters)]
    if row != "keras":  # the Keras script's first epoch is its warm-up
        args += ["--num-warmup-batches", str(a.warmup)]
    if row != "torch":
        args.append("--no-cuda")  # a CPU run; upstream's TF scripts default to GPU placement
    return args


def jobs(peer, row, a, script, env):
    """[(argv, env)] of one peer's job: one launcher, or N processes."""
    py, n = sys.executable, a.np
    args = script_args(a, row)
    twin = os.path.join(TWINS, TWIN[row])
    if peer in ("hvda", "hvda-off"):
        flags = ["--threads-per-rank", "off"] if peer == "hvda-off" else []
        return [([py, "-m", "horovod_accel.runner.launch", "-np", str(n)] + flags
                 + shlex.split(a.hvda_args) + [py, script] + args, env)]
    if peer == "ideal":
        share = compute_threads.launcher_env({}, n)
        return [([py, twin, "--no-communication"] + args,
                 dict(env, HVDA_TWIN_INDEX=str(i), RANK=str(i), **share)) for i in range(n)]
    if row == "torch":
        return [([py, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", str(n),
                  "--master_addr", "127.0.0.1", "--master_port", str(free_port()), twin] + args,
                 env)]
    workers = [f"127.0.0.1:{free_port()}" for _ in range(n)]
    return [([py, twin] + args,
             dict(env, TF_CONFIG=json.dumps({"cluster": {"worker": workers},
                                             "task": {"type": "worker", "index": i}})))
            for i in range(n)]


def run_job(peer, row, a, script, env, log_path):
    """Runs one job to its end; returns (img/s or None, reason or None)."""
    rcs, text = run_processes(jobs(peer, row, a, script, env), log_path, a.timeout, a.verbose)
    if None in rcs:
        return None, f"timed out after {a.timeout:.0f} s"
    if any(rcs):
        return None, f"exit code {max(rcs)}: {reason_line(text)}"
    sums = {r: float(v) for r, v in WEIGHTS.findall(text)}
    if peer == "twin" and len(set(sums.values())) > 1:
        return None, f"replicas ended with different weights ({sums}): gradients not averaged"
    if peer == "ideal":
        rates = [float(v) for _, v in PER_RANK.findall(text)]
        return (sum(rates), None) if len(rates) == a.np else (None, "missing per-process rates")
    m = TOTAL.search(text)
    return (float(m.group(2)), None) if m else (None, "no 'Total img/sec' line")


def table(a, results, edits):
    peers = a.peers
    twin_of = lambda row: TWIN_NAME[row]  # noqa: E731
    head = ["row", "model", "batch", "np"] + [f"{c} (img/s)" for c in peers]
    pairs = [(x, y) for x, y in (("hvda", "twin"), ("hvda", "ideal"), ("twin", "ideal"),
                                 ("hvda", "hvda-off")) if x in peers and y in peers]
    head += [f"{x}/{y}" for x, y in pairs]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in a.rows:
        runs = results[row]
        model = a.torch_model if row == "torch" else a.tf_model

        def med(peer):
            vals = [r[peer] for r in runs if r.get(peer) is not None]
            return f"{statistics.median(vals):.1f}" if vals else "n/a"

        def ratios(x, y):
            return [r[x] / r[y] for r in runs if r.get(x) and r.get(y)]
        cells = [f"{row} (twin: {twin_of(row)})", model, str(a.batch_size), str(a.np)]
        cells += [med(p) for p in peers] + [spread(ratios(x, y)) for x, y in pairs]
        lines.append("| " + " | ".join(cells) + " |")
    notes = [f"{len(results[a.rows[0]])} repeats, alternating; ratios same-repeat, median "
             f"[min..max]; > 1 favours the first peer."]
    for row, edit in edits.items():
        if edit:
            notes.append(f"{row}: upstream's script with one Keras 3 edit: {edit[0]!r} -> "
                         f"{edit[1]!r}")
    return "\n".join(lines + [""] + notes)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--horovod-repo", required=True,
                   help="horovod/horovod checkout or git directory with upstream's examples")
    p.add_argument("--rows", default="torch,tf2,keras", help="comma list of torch, tf2, keras")
    p.add_argument("--peers", default="hvda,twin,ideal",
                   help="comma list of hvda, hvda-off, twin, ideal")
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--torch-model", default="resnet18")
    p.add_argument("--tf-model", default="MobileNetV2")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--warmup", type=int, default=5, help="--num-warmup-batches")
    p.add_argument("--batches-per-iter", type=int, default=5, help="--num-batches-per-iter")
    p.add_argument("--iters", type=int, default=5, help="--num-iters")
    p.add_argument("--hvda-args", default="", help="extra horovodrun flags for hvda peers")
    p.add_argument("--legacy-keras", action="store_true",
                   help="run the tf2 row on tf_keras (TF_USE_LEGACY_KERAS=1), script unchanged")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per job")
    p.add_argument("--json", help="write every run's numbers here")
    p.add_argument("--verbose", action="store_true")
    a = p.parse_args()
    a.rows = [r for r in a.rows.split(",") if r]
    a.peers = [x for x in a.peers.split(",") if x]
    bad = [r for r in a.rows if r not in UPSTREAM] + \
        [x for x in a.peers if x not in ("hvda", "hvda-off", "twin", "ideal")]
    if bad:
        p.error(f"unknown rows/peers: {bad}")
    busy = busy_processes()
    if busy:
        print(f"warning: compilers running ({', '.join(busy)}): numbers will be noise",
              file=sys.stderr)
    workdir = tempfile.mkdtemp(prefix="hvda_synthetic_")
    env = base_env(a.legacy_keras)
    scripts, edits = {}, {}
    for row in a.rows:
        scripts[row], edits[row] = upstream_script(a.horovod_repo, UPSTREAM[row], workdir, row,
                                                   a.legacy_keras)
    results = {row: [] for row in a.rows}
    for rep in range(a.repeats):
        for row in a.rows:
            order = list(a.peers) if rep % 2 == 0 else list(reversed(a.peers))
            run = {}
            for peer in order:
                t0 = time.monotonic()
                rate, why = run_job(peer, row, a, scripts[row], env,
                                    os.path.join(workdir, f"{row}.{peer}.{rep}.log"))
                run[peer] = rate
                print(f"repeat {rep + 1}/{a.repeats} {row:5s} {peer:8s} "
                      f"{f'{rate:.1f} img/s' if rate else 'FAILED: ' + why} "
                      f"({time.monotonic() - t0:.0f} s)", file=sys.stderr, flush=True)
            results[row].append(run)
    print(table(a, results, edits))
    print(f"logs: {workdir}", file=sys.stderr)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"args": {k: v for k, v in vars(a).items()}, "results": results,
                       "edits": edits, "host": {"cpus": os.cpu_count(),
                                                "loadavg": os.getloadavg()}}, f, indent=1)


if __name__ == "__main__":
    main()
