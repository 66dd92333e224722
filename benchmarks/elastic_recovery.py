#!/usr/bin/env python
"""Recovery after a SIGKILLed worker: elastic horovodrun against a static job
restarted from a checkpoint, measured back to back in one run.

    .venv/bin/python benchmarks/elastic_recovery.py                # 2->1 and 4->2, 3 repeats, ~2 min
    .venv/bin/python benchmarks/elastic_recovery.py --quick        # smoke run, one repeat
    .venv/bin/python benchmarks/elastic_recovery.py --cases 4to2 --repeats 5 --json /tmp/er.json

Two hosts that both run here, "localhost" and "127.0.0.1", with N/2 slots
each. Every job runs elastic_scripts/recovery_worker.py: an MLP
(512-H-H-10, --hidden 1024 by default) on a fixed random batch with
hvd.DistributedOptimizer, one thread per process. The worker with local rank
0 on 127.0.0.1 SIGKILLs itself at the start of step --kill-step (the last
commit / checkpoint is at that step, so neither path loses work):

  elastic  horovodrun -np N --min-np N/2 --host-discovery-script S python worker --mode elastic
           (hvd.elastic.run + TorchState). The driver blacklists 127.0.0.1 (and
           stops its other worker), the survivors reset into a round of N/2.
  restart  horovodrun -np N -H localhost:N/2,127.0.0.1:N/2 python worker --mode static
           (rank 0 writes a checkpoint file every --commit-every steps) dies; as soon
           as its launcher has exited the driver starts
           horovodrun -np N/2 -H localhost:N/2 python worker --mode static --resume
           (new processes: import torch, hvd.init, rank 0 loads the checkpoint,
           broadcast_parameters / broadcast_optimizer_state). That is an automated
           restart, the best case of doing it without elastic.

Measured (time.time() in the workers and the driver, one machine): from the
kill (the killed worker's timestamp just before its SIGKILL) to the first
training step completed at the reduced size (the first step index after the
kill, its latest timestamp over the ranks). Per case: median [min..max] over
--repeats, and the same-repeat ratio restart / elastic. See benchmarks/README.md.
"""
import argparse
import glob
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
from allreduce import busy_processes, job_env, reason_line, run_logged  # noqa: E402

WORKER = os.path.join(HERE, "elastic_scripts", "recovery_worker.py")
CASES = {"2to1": 2, "4to2": 4}
LAUNCH = [sys.executable, "-m", "horovod_accel.runner.launch"]


class JobFailed(Exception):
    pass


def read_events(workdir, skip=()):
    """Every worker's JSON lines in workdir, except files named in skip."""
    events = []
    for path in sorted(glob.glob(os.path.join(workdir, "*.jsonl"))):
        if os.path.basename(path) in skip:
            continue
        with open(path) as f:
            events.extend(json.loads(line) for line in f if line.strip())
    return events


def kill_strays(events):
    """SIGKILLs any worker of ours still alive after its launcher returned
    (pid from the worker's own log, checked against its command line)."""
    left = []
    for pid in sorted({e["pid"] for e in events}):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"recovery_worker.py" not in f.read():
                    continue
            os.kill(pid, 9)
            left.append(pid)
        except (OSError, ProcessLookupError):
            pass
    return left


def run_launcher(cmd, workdir, tag, env, a):
    """Runs one horovodrun to its end (or --timeout); returns (rc, exit time.time(), log text)."""
    rc, text = run_logged(cmd, os.path.join(workdir, f"{tag}.log"), env, a.timeout, a.verbose)
    t_exit = time.time()
    if rc is None:
        raise JobFailed(f"{tag}: timed out after {a.timeout:.0f} s\n" + tail(text))
    return rc, t_exit, text


def tail(text, n=15):
    return "\n".join("    " + l for l in text.splitlines()[-n:])


def worker_args(a, mode, workdir):
    return [sys.executable, WORKER, "--mode", mode, "--dir", workdir, "--steps", str(a.steps),
            "--kill-step", str(a.kill_step), "--commit-every", str(a.commit_every),
            "--hidden", str(a.hidden), "--batch", str(a.batch)]


def first_step_after(events, t_kill, size):
    """(step index, completion time over ranks) of the first step after the
    kill at `size`; JobFailed if the steps after the kill ran at another size."""
    after = [e for e in events if e["ev"] == "step" and e["t"] > t_kill]
    if not after:
        raise JobFailed("no training step after the kill")
    bad = [e for e in after if e["size"] != size]
    if bad:
        raise JobFailed(f"steps after the kill ran at size {bad[0]['size']}, expected {size}")
    first = min(e["step"] for e in after)
    done = [e["t"] for e in after if e["step"] == first]
    if len(done) != size:
        raise JobFailed(f"step {first} after the kill completed on {len(done)} ranks, not {size}")
    return first, max(done)


def step_time(events, t_kill):
    """Median interval between the completed steps of one rank-0 before the kill."""
    ts = sorted(e["t"] for e in events
                if e["ev"] == "step" and e["rank"] == 0 and e["t"] < t_kill)
    gaps = [b - a_ for a_, b in zip(ts[len(ts) // 3:], ts[len(ts) // 3 + 1:])]
    return statistics.median(gaps) if gaps else None


def the_kill(events):
    kills = [e for e in events if e["ev"] == "kill"]
    if len(kills) != 1:
        raise JobFailed(f"{len(kills)} kill events (expected 1)")
    return kills[0]


def run_elastic(a, n, workdir, env):
    half = n // 2
    hosts = os.path.join(workdir, "discover.sh")
    with open(hosts, "w") as f:
        f.write(f"#!/bin/sh\nprintf 'localhost:{half}\\n127.0.0.1:{half}\\n'\n")
    os.chmod(hosts, 0o755)
    cmd = LAUNCH + ["-np", str(n), "--min-np", str(half), "--host-discovery-script", hosts] \
        + shlex.split(a.hvda_args) + worker_args(a, "elastic", workdir)
    try:
        rc, _, text = run_launcher(cmd, workdir, "elastic", env, a)
    finally:
        strays = kill_strays(read_events(workdir))
    if rc != 0 or f"DONE size={half}" not in text:
        raise JobFailed(f"elastic job: exit code {rc}: {reason_line(text)}\n" + tail(text))
    ev = read_events(workdir)
    kill = the_kill(ev)
    step, t_first = first_step_after(ev, kill["t"], half)
    if step != a.kill_step:
        raise JobFailed(f"elastic job resumed at step {step}, expected {a.kill_step}")
    t0 = kill["t"]
    synced = {e["pid"]: e["t"] for e in ev if e["ev"] == "synced" and e["t"] > t0}
    errors = [e["t"] for e in ev if e["ev"] == "error" and e["t"] > t0 and e["pid"] in synced]
    synced = list(synced.values())
    parts = {}
    if len(errors) == half and len(synced) == half:
        parts = {"detect": max(errors) - t0, "reset+sync": max(synced) - max(errors),
                 "first step": t_first - max(synced)}
    return {"recovery_s": t_first - t0, "parts": parts, "step_s": step_time(ev, t0),
            "strays": strays}


def run_restart(a, n, workdir, env):
    half = n // 2
    cmd = LAUNCH + ["-np", str(n), "-H", f"localhost:{half},127.0.0.1:{half}"] \
        + shlex.split(a.hvda_args) + worker_args(a, "static", workdir)
    try:
        rc, t_exit, text = run_launcher(cmd, workdir, "static", env, a)
    finally:
        strays = kill_strays(read_events(workdir))
    if rc == 0:
        raise JobFailed("the static job did not fail after the kill\n" + tail(text))
    first_files = {os.path.basename(p) for p in glob.glob(os.path.join(workdir, "*.jsonl"))}
    # The restart: as soon as the first launcher has exited.
    cmd = LAUNCH + ["-np", str(half), "-H", f"localhost:{half}"] + shlex.split(a.hvda_args) \
        + worker_args(a, "static", workdir) + ["--resume"]
    try:
        rc2, _, text2 = run_launcher(cmd, workdir, "restart", env, a)
    finally:
        strays += kill_strays(read_events(workdir))
    if rc2 != 0 or f"DONE size={half}" not in text2:
        raise JobFailed(f"restarted job: exit code {rc2}: {reason_line(text2)}\n" + tail(text2))
    kill = the_kill(read_events(workdir))
    ev = read_events(workdir, skip=first_files)
    step, t_first = first_step_after(ev, t_exit, half)
    if step != a.kill_step:
        raise JobFailed(f"restarted job resumed at step {step}, expected {a.kill_step}")
    t0 = kill["t"]
    # Each phase ends when its last rank is through it.
    marks = [("job exit", t_exit)]
    for name, ev_name in (("launch", "start"), ("import", "imported"), ("init", "init"),
                          ("model+opt", "model"), ("load+bcast", "loaded")):
        ts = [e["t"] for e in ev if e["ev"] == ev_name]
        if len(ts) != half:
            break
        marks.append((name, max(ts)))
    else:
        marks.append(("first step", t_first))
    parts, prev = {}, t0
    for name, t in marks:
        parts[name], prev = t - prev, t
    return {"recovery_s": t_first - t0, "parts": parts,
            "step_s": step_time(read_events(workdir), t0), "strays": strays}


def spread(values, unit=" s", digits=2):
    """'median unit [min..max]' of the values."""
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return "n/a"
    med = f"{statistics.median(vals):.{digits}f}{unit}"
    return med if len(vals) == 1 else f"{med} [{vals[0]:.{digits}f}..{vals[-1]:.{digits}f}]"


def render(results, cases):
    lines = ["| case | elastic: kill -> first step | restart from checkpoint: kill -> first step "
             "| restart / elastic | step before the kill |",
             "|---|---|---|---|---|"]
    for case in cases:
        r = results.get(case, {})
        el = [x["recovery_s"] for x in r.get("elastic", [])]
        rs = [x["recovery_s"] for x in r.get("restart", [])]
        ratios = [x["restart"]["recovery_s"] / x["elastic"]["recovery_s"]
                  for x in r.get("pairs", [])]
        steps = [x["step_s"] * 1e3 for x in r.get("elastic", []) if x["step_s"]]
        n = CASES[case]
        lines.append(f"| np {n} -> {n // 2} | {spread(el)} | {spread(rs)} | {spread(ratios, 'x', 1)} "
                     f"| {spread(steps, ' ms', 1)} |")
    return "\n".join(lines)


def render_parts(results, cases):
    lines = []
    for case in cases:
        for mode in ("elastic", "restart"):
            runs = results.get(case, {}).get(mode, [])
            keys = list(runs[0]["parts"]) if runs else []
            if not keys or any(list(x["parts"]) != keys for x in runs):
                continue
            cells = ", ".join(f"{k} {statistics.median(x['parts'][k] for x in runs):.2f}"
                              for k in keys)
            lines.append(f"  np {CASES[case]} -> {CASES[case] // 2} {mode:8s} {cells} (s, medians)")
    return "\n".join(lines)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default="2to1,4to2", help="comma list from 2to1,4to2")
    p.add_argument("--repeats", type=int, help="runs of each path per case (default 3; --quick 1)")
    p.add_argument("--quick", action="store_true", help="smoke run: one repeat, fewer steps")
    p.add_argument("--kill-step", type=int, help="step at which the worker dies (default 30; "
                   "--quick 10); a multiple of --commit-every")
    p.add_argument("--commit-every", type=int, default=10,
                   help="steps between commits (elastic) / checkpoints (restart)")
    p.add_argument("--after", type=int, default=10, help="steps to run after the kill")
    p.add_argument("--hidden", type=int, default=1024, help="MLP hidden width")
    p.add_argument("--batch", type=int, default=32, help="batch per rank")
    p.add_argument("--hvda-args", default="", help="extra horovodrun arguments (both paths)")
    p.add_argument("--timeout", type=float, default=120.0, help="hard limit per job (s)")
    p.add_argument("--json", metavar="PATH", help="also write every run's numbers here")
    p.add_argument("--keep", action="store_true", help="keep the job directories (printed)")
    p.add_argument("-v", "--verbose", action="store_true")
    a = p.parse_args(argv)
    a.cases = [c for c in a.cases.split(",") if c]
    for c in a.cases:
        if c not in CASES:
            p.error(f"unknown case {c!r} (choose from {', '.join(CASES)})")
    a.repeats = a.repeats or (1 if a.quick else 3)
    a.kill_step = a.kill_step or (10 if a.quick else 30)
    if a.kill_step % a.commit_every or a.kill_step <= 0:
        p.error("--kill-step must be a positive multiple of --commit-every")
    a.steps = a.kill_step + a.after
    return a


def main(argv=None):
    a = parse_args(argv)
    env = job_env()
    load = os.getloadavg()[0]
    print(f"elastic_recovery benchmark: cases {','.join(a.cases)}, {os.cpu_count()} CPUs, "
          f"MLP 512-{a.hidden}-{a.hidden}-10, batch {a.batch}, kill at step {a.kill_step}, "
          f"{a.repeats} repeat(s); load {load:.2f}", flush=True)
    if busy_processes():
        print("WARNING: build processes running: numbers will be noise", file=sys.stderr)
    results, errors = {}, {}
    root = tempfile.mkdtemp(prefix="hvda_elastic_rec_")
    for rep in range(a.repeats):
        for case in a.cases:
            n = CASES[case]
            order = ["elastic", "restart"] if rep % 2 == 0 else ["restart", "elastic"]
            pair = {}
            for mode in order:
                tag = f"{case}.{mode}.{rep}"
                workdir = os.path.join(root, tag)
                os.makedirs(workdir)
                t0 = time.monotonic()
                try:
                    r = (run_elastic if mode == "elastic" else run_restart)(a, n, workdir, env)
                except JobFailed as e:
                    errors[tag] = str(e)
                    print(f"  {tag}: FAILED: {e}", flush=True)
                    continue
                pair[mode] = r
                results.setdefault(case, {}).setdefault(mode, []).append(r)
                parts = ", ".join(f"{k} {v:.2f}" for k, v in r["parts"].items())
                print(f"  {tag}: {r['recovery_s']:.2f} s ({parts})"
                      + (f"; SIGKILLed leftover workers {r['strays']}" if r["strays"] else "")
                      + f" [{time.monotonic() - t0:.0f} s]", flush=True)
            if len(pair) == 2:
                results[case].setdefault("pairs", []).append(pair)
    print()
    print("Seconds from the SIGKILL to the first training step completed at the reduced size; "
          f"median [min..max] over {a.repeats} repeat(s); ratio: same repeat. "
          f"Load {load:.2f} at start, {os.getloadavg()[0]:.2f} at end.")
    print(render(results, a.cases))
    parts = render_parts(results, a.cases)
    if parts:
        print("where the time goes:\n" + parts)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"argv": sys.argv, "load_before": load, "load_after": os.getloadavg()[0],
                       "results": results, "errors": errors}, f, indent=1)
    if a.keep:
        print(f"job directories: {root}")
    else:
        import shutil
        shutil.rmtree(root, ignore_errors=True)
    for tag, reason in errors.items():
        print(f"failed job {tag}: {reason.splitlines()[0]}")
    complete = all(len(results.get(c, {}).get("pairs", [])) == a.repeats for c in a.cases)
    return 0 if complete and not errors else 1


if __name__ == "__main__":
    sys.exit(main())
