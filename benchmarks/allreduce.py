#!/usr/bin/env python
"""Allreduce benchmark: horovod_accel against torch.distributed (gloo) and Open MPI,
measured back to back in one run, printed as one table with ratios.

    .venv/bin/python benchmarks/allreduce.py              # np=2, all three peers, 3 rounds
    .venv/bin/python benchmarks/allreduce.py --quick      # smoke run, < 60 s
    .venv/bin/python benchmarks/allreduce.py --only hvda,mpi --sizes 1M,64M --json out.json
    .venv/bin/python benchmarks/allreduce.py --hosts 2x2 --only hvda,mpi   # root: 2 hosts x 2

Each peer is one job of `--np` processes, started by its own launcher:
  hvda   python -m horovod_accel.runner.launch -np N python peers/hvda_worker.py
  torch  python -m torch.distributed.run --nproc_per_node N ... peers/torch_worker.py
  mpi    mpirun -np N --allow-run-as-root --oversubscribe python peers/mpi_worker.py
Every worker runs the same measurement code (peers/bench_common.py, where the
timing rules are written down); rank 0 writes its results as JSON to a temp file
whose path the driver passes in. A job that fails or runs past --timeout is
reported as "n/a (reason)" and the other peers still run. See benchmarks/README.md.

--hosts HxR runs hvda and mpi over H namespace hosts with R ranks each
(tests/multihost/netns_hosts.py: network namespaces on a private bridge, own
/dev/shm; needs root): both launchers start on the first host and reach the
others through a stand-in ssh, `horovodrun -H a:R,b:R` and
`mpirun -H a:R,b:R`. torch is not run there (torchrun needs one launch per host).
"""
import argparse
import contextlib
import json
import os
import platform
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import host_probe  # benchmarks/, this script's directory

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
PEERS_DIR = os.path.join(HERE, "peers")

PEER_ORDER = ("hvda", "torch", "mpi")
PEER_LABEL = {"hvda": "horovod_accel", "torch": "torch gloo", "mpi": "Open MPI"}

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
DEFAULT_SIZES = [4 * KIB, 64 * KIB, 1 * MIB, 16 * MIB, 64 * MIB, 256 * MIB]
QUICK_SIZES = [4 * KIB, 64 * KIB, 1 * MIB]


# ---------------------------------------------------------------- plan

def parse_size(text):
    """'4K' / '64KiB' / '1M' / '4096' -> bytes (binary units); must be a multiple of 4 (float32)."""
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    mult = {"K": KIB, "M": MIB, "G": GIB}.get(t[-1:], 1)
    if mult != 1:
        t = t[:-1]
    n = int(float(t) * mult)
    if n <= 0 or n % 4:
        raise argparse.ArgumentTypeError(f"size {text!r} must be a positive multiple of 4 bytes")
    return n


def human_size(n):
    for unit, div in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def make_plan(a):
    """The worker config: per size (bytes, timed iterations, warm-up iterations),
    the latency and async-batch settings. Iterations shrink with size so every
    size moves roughly the same number of bytes (`budget`)."""
    if a.quick:
        budget, lo, hi = 64 * MIB, 5, 50
    else:
        budget, lo, hi = 2 * GIB, 7, 200
    sizes = []
    for nbytes in a.sizes:
        iters = max(lo, min(hi, budget // nbytes))
        warmup = max(2, min(10, iters // 8))
        sizes.append([nbytes, iters, warmup])
    return {
        "sizes": sizes,
        "latency": {"bytes": 4 * KIB, "iters": a.latency_iters, "warmup": 20},
        "batch": {"count": 100, "elems": 1000, "reps": a.batch_reps, "warmup": 3},
    }


# ---------------------------------------------------------------- peers

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker_cmd(peer, a, worker_args, hosts=None):
    """The launcher command line that starts `peer`'s worker on a.np ranks
    (on the namespace hosts `hosts`, when given: see --hosts)."""
    py = sys.executable
    script = os.path.join(PEERS_DIR, f"{peer}_worker.py")
    if hosts is not None:
        host_list = ",".join(f"{h.addr}:{a.np // len(hosts.hosts)}" for h in hosts.hosts)
        if peer == "hvda":
            cmd = ([py, "-m", "horovod_accel.runner.launch", "-np", str(a.np), "-H", host_list]
                   + shlex.split(a.hvda_args) + [py, script] + worker_args)
        elif peer == "mpi":
            cmd = (["mpirun", "-np", str(a.np), "--allow-run-as-root", "--oversubscribe",
                    "-H", host_list, "--mca", "plm_rsh_agent", hosts.ssh, "-x", "PYTHONPATH",
                    "-x", "OMP_NUM_THREADS"] + shlex.split(a.mpi_args) + [py, script]
                   + worker_args)
        else:
            raise ValueError(f"{peer} does not run across namespace hosts")
        return hosts.hosts[0].command(cmd, cwd=REPO_ROOT)
    if peer == "hvda":
        return ([py, "-m", "horovod_accel.runner.launch", "-np", str(a.np)]
                + shlex.split(a.hvda_args) + [py, script] + worker_args)
    if peer == "torch":
        return [py, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", str(a.np),
                "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
                script] + worker_args
    if peer == "mpi":
        return (["mpirun", "-np", str(a.np), "--allow-run-as-root", "--oversubscribe"]
                + shlex.split(a.mpi_args) + [py, script] + worker_args)
    raise ValueError(peer)


PREFLIGHT_IMPORT = {
    # Attribute look-ups too: a half-written package can import as an empty namespace.
    "hvda": ("import horovod_accel.torch as hvd; "
             "[getattr(hvd, n) for n in ('init', 'rank', 'size', 'allreduce_', 'allreduce_async_', "
             "'synchronize', 'barrier', 'Sum', 'Max')]"),
    "torch": "import torch.distributed as d; assert d.is_gloo_available(), 'gloo not built'",
    "mpi": "import mpi4py, numpy",
}


def job_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO_ROOT, env.get("PYTHONPATH")) if p)
    env["OMP_NUM_THREADS"] = "1"  # workers also call torch.set_num_threads(1)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def reason_line(text):
    """The line of a failed job's output most likely to say why: the last one
    naming an error, else the last line."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    if not lines:
        return "no output"
    errs = [l for l in lines if "error" in l.lower() or "exception" in l.lower()]
    return (errs or lines)[-1][:200]


def preflight(peer, env):
    """None if `peer` can run here, else a one-line reason."""
    if peer == "mpi" and shutil.which("mpirun") is None:
        return "mpirun not found on PATH"
    try:
        p = subprocess.run([sys.executable, "-c", PREFLIGHT_IMPORT[peer]], env=env, cwd=REPO_ROOT,
                           capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return f"'{PREFLIGHT_IMPORT[peer]}' took over 60 s"
    if p.returncode != 0:
        return reason_line(p.stderr)
    return None


def descendants(root_pid):
    """Pids of every live descendant of root_pid (read from /proc)."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [root_pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def stop_job(proc, grace=10.0):
    """Stops a launcher we started, and every process under it.

    SIGTERM to the launcher's process group first (horovodrun, torchrun and
    mpirun all forward it to their ranks), SIGKILL by pid to whatever is left
    after `grace` seconds (horovodrun puts each rank in its own session, so the
    group alone does not reach them)."""
    tree = descendants(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    for pid in [proc.pid] + tree:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    proc.wait()


def run_logged(cmd, log_path, env, timeout, verbose=False):
    """Runs a launcher command to its end, its stdout and stderr to log_path;
    past `timeout` seconds stops its whole process tree. Returns (exit code,
    or None on timeout; the log's text)."""
    if verbose:
        print("  $ " + " ".join(shlex.quote(c) for c in cmd), file=sys.stderr)
    with open(log_path, "w") as log:
        # Own session: a timeout can signal the launcher's whole process group.
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO_ROOT,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop_job(proc)
            rc = None
    with open(log_path, errors="replace") as f:
        return rc, f.read()


def run_processes(cmds, log_prefix, timeout, verbose=False):
    """Starts every (argv, env) of `cmds` at once (each in its own session,
    its output to `<log_prefix>.<i>`, so lines of different processes never
    mix), waits up to `timeout` seconds for all of them and stops those still
    running with their process trees. Returns ([exit code, or None on
    timeout, per command], the logs' text joined in command order)."""
    procs, logs = [], [f"{log_prefix}.{i}" for i in range(len(cmds))]
    for (argv, env), path in zip(cmds, logs):
        if verbose:
            print("  $ " + " ".join(shlex.quote(c) for c in argv), file=sys.stderr)
        with open(path, "w") as log:
            procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                          cwd=REPO_ROOT, start_new_session=True))
    deadline = time.monotonic() + timeout
    rcs = []
    for p in procs:
        try:
            rcs.append(p.wait(timeout=max(1.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            rcs.append(None)
    for p, rc in zip(procs, rcs):
        if rc is None:
            stop_job(p)
    text = []
    for path in logs:
        with open(path, errors="replace") as f:
            text.append(f.read())
    return rcs, "\n".join(text)


def run_peer(peer, a, cfg_path, workdir, env, hosts=None):
    """Runs one peer's job; returns (result dict or None, None or reason, job output tail)."""
    reason = preflight(peer, env)
    if reason:
        return None, reason, ""
    if hosts is not None and peer == "torch":
        return None, "not run across namespace hosts (torchrun needs one launch per host)", ""
    out_path = os.path.join(workdir, f"{peer}.json")
    log_path = os.path.join(workdir, f"{peer}.log")
    cmd = worker_cmd(peer, a, ["--out", out_path, "--config", cfg_path], hosts)
    if hosts is not None:
        env = hosts.env(env)
    t0 = time.monotonic()
    rc, log_text = run_logged(cmd, log_path, env, a.timeout, a.verbose)
    wall = time.monotonic() - t0
    tail = "\n".join(log_text.splitlines()[-15:])
    if rc is None:
        return None, f"timed out after {a.timeout:.0f} s", tail
    if rc != 0:
        return None, f"exit code {rc}: {reason_line(log_text)}", tail
    try:
        with open(out_path) as f:
            result = json.load(f)
    except (OSError, ValueError) as e:
        return None, f"no result file from rank 0 ({e.__class__.__name__})", tail
    result["job_wall_s"] = wall
    return result, None, tail


# ---------------------------------------------------------------- report

def busy_processes():
    """Names of compiler/linker processes now running (they make numbers garbage on 2 cores)."""
    busy = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/comm") as f:
                    name = f.read().strip()
            except OSError:
                continue
            # zig: the release wheels' compiler (docs/design/packaging.md).
            if name in ("cc1plus", "cc1", "ld", "ld.lld", "ld.gold", "ninja", "make", "nvcc",
                        "zig"):
                busy.append(f"{name}({d})")
    return busy


def probe_text(probes):
    """'12.9 / 2.3 GB/s -- SLOW PHASE ...' for a round's host_probe readings."""
    text = " / ".join("n/a" if p is None else f"{p:.1f}" for p in probes) + " GB/s"
    if any(p is not None and p < host_probe.SLOW_GBPS for p in probes):
        text += " -- SLOW PHASE of this VM: its shared-memory numbers say more about the VM"
    return text


def fmt(v):
    if v is None:
        return "n/a"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    if v >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def table_rows(results, sizes):
    """[(metric, better, {peer: value})]; better is 'high' (busbw) or 'low' (times)."""
    def get(peer, *path):
        r = results.get(peer)
        for k in path:
            if not isinstance(r, dict) or k not in r:
                return None
            r = r[k]
        return r

    rows = []
    for n in sizes:
        rows.append((f"busbw {human_size(n)} (GB/s)", "high",
                     {p: get(p, "busbw", str(n), "busbw_GBps") for p in PEER_ORDER}))
    for key, label in (("median_s", "median"), ("p90_s", "p90")):
        rows.append((f"4 KiB allreduce latency, {label} (us)", "low",
                     {p: (None if get(p, "latency", key) is None else get(p, "latency", key) * 1e6)
                      for p in PEER_ORDER}))
    rows.append(("100 x 1000-float async batch, median (ms)", "low",
                 {p: (None if get(p, "batch", "median_s") is None
                      else get(p, "batch", "median_s") * 1e3) for p in PEER_ORDER}))
    return rows


def ratio(better, h, o):
    """Same-run ratio, > 1 when horovod_accel is better; None if either is missing."""
    if not h or not o:
        return None
    return h / o if better == "high" else o / h


def spread(values, pct=False):
    """'median [min..max]' of the non-missing ratios, as x (or % with pct)."""
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return "n/a"
    f = (lambda v: f"{100 * v:.0f}%") if pct else (lambda v: f"{v:.2f}x")  # noqa: E731
    med = f(statistics.median(vals))
    return med if len(vals) == 1 else f"{med} [{f(vals[0])}..{f(vals[-1])}]"


def render_summary(rounds, sizes):
    """One row per metric over R rounds: each peer's median value, and each
    same-run ratio's median and range (the numbers to quote)."""
    per_round = [table_rows(results, sizes) for results in rounds]
    cols = (["metric"] + [f"{PEER_LABEL[p]} (median)" for p in PEER_ORDER]
            + ["ratio hvda/torch", "ratio hvda/MPI"])
    body = []
    for i, (metric, better, _) in enumerate(per_round[0]):
        cells = [metric]
        for peer in PEER_ORDER:
            vals = [r[i][2][peer] for r in per_round if r[i][2][peer] is not None]
            cells.append(fmt(statistics.median(vals)) if vals else "n/a")
        for peer in ("torch", "mpi"):
            cells.append(spread([ratio(better, r[i][2]["hvda"], r[i][2][peer]) for r in per_round]))
        body.append(cells)
    return _layout(cols, body)


def _layout(cols, body):
    widths = [max(len(r[i]) for r in [cols] + body) for i in range(len(cols))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    out = [line(cols), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(r) for r in body]
    return "\n".join(out)


def render_table(results, sizes):
    cols = ["metric"] + [PEER_LABEL[p] for p in PEER_ORDER] + ["ratio hvda/torch", "ratio hvda/MPI"]
    body = []
    for metric, better, vals in table_rows(results, sizes):
        cells = [metric]
        cells += [fmt(vals[p]) for p in PEER_ORDER]  # reasons for n/a are printed below
        for peer in ("torch", "mpi"):
            r = ratio(better, vals["hvda"], vals[peer])
            cells.append("n/a" if r is None else f"{r:.2f}x")
        body.append(cells)
    return _layout(cols, body)


# ---------------------------------------------------------------- main

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--np", type=int, default=2, help="ranks per job (default 2)")
    p.add_argument("--only", default=",".join(PEER_ORDER),
                   help="comma list of peers to run, from hvda,torch,mpi (default: all)")
    p.add_argument("--sizes", type=lambda s: [parse_size(x) for x in s.split(",") if x],
                   help="comma list of busbw message sizes, e.g. 4K,1M,64M "
                        "(default 4K,64K,1M,16M,64M,256M; --quick: 4K,64K,1M)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: small sizes, few iterations (finishes in < 60 s)")
    p.add_argument("--latency-iters", type=int, help="timed 4 KiB iterations (default 500; --quick 50)")
    p.add_argument("--batch-reps", type=int, help="timed async-batch repetitions (default 30; --quick 5)")
    p.add_argument("--timeout", type=float, help="hard limit per job in seconds (default 300; --quick 60)")
    p.add_argument("--repeats", type=int,
                   help="run the whole comparison R times and report each ratio's median and "
                        "range over the rounds (default 3; --quick 1)")
    p.add_argument("--json", metavar="PATH", help="also write the raw numbers here")
    p.add_argument("--hvda-args", default="", help="extra horovodrun arguments, e.g. '--cycle-time-ms 0.1'")
    p.add_argument("--mpi-args", default="", help="extra mpirun arguments, e.g. '--bind-to none'")
    p.add_argument("--hosts", metavar="HxR",
                   help="run over H namespace hosts with R ranks each, e.g. 2x2 (needs root; "
                        "sets --np to H*R; peers hvda and mpi)")
    p.add_argument("-v", "--verbose", action="store_true", help="print commands and job output tails")
    a = p.parse_args(argv)
    a.only = [x.strip() for x in a.only.split(",") if x.strip()]
    bad = [x for x in a.only if x not in PEER_ORDER]
    if bad:
        p.error(f"--only: unknown peer(s) {bad}; choose from {','.join(PEER_ORDER)}")
    if a.np < 1:
        p.error("--np must be >= 1")
    a.host_layout = None
    if a.hosts:
        try:
            n_hosts, per_host = (int(x) for x in a.hosts.lower().split("x"))
            assert n_hosts >= 1 and per_host >= 1
        except (ValueError, AssertionError):
            p.error(f"--hosts takes HxR with H hosts and R ranks per host, e.g. 2x2; "
                    f"got {a.hosts!r}")
        a.host_layout = (n_hosts, per_host)
        a.np = n_hosts * per_host
    a.sizes = a.sizes or (QUICK_SIZES if a.quick else DEFAULT_SIZES)
    a.latency_iters = a.latency_iters or (50 if a.quick else 500)
    a.batch_reps = a.batch_reps or (5 if a.quick else 30)
    a.timeout = a.timeout or (60.0 if a.quick else 300.0)
    a.repeats = a.repeats or (1 if a.quick else 3)
    if a.repeats < 1:
        p.error("--repeats must be >= 1")
    return a


def run_meta(a):
    """What every benchmark driver records about its start (argv, machine,
    load, build processes running) and warns about."""
    meta = {
        "argv": sys.argv, "np": a.np, "cpus": os.cpu_count(), "python": platform.python_version(),
        "host": platform.node(), "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "loadavg_before": os.getloadavg()[0], "busy_before": busy_processes(),
    }
    return meta


def warn_if_busy(meta):
    if meta["busy_before"]:
        print(f"WARNING: build processes running ({', '.join(meta['busy_before'][:5])}): "
              "numbers will be noise", file=sys.stderr)


def end_meta(meta):
    """Records the load and build processes at the end of the run into meta."""
    end_meta(meta)


def warn_if_busy_after(meta):
    if meta["busy_after"] and not meta["busy_before"]:
        print("WARNING: build processes started during the run "
              f"({', '.join(meta['busy_after'][:5])})", file=sys.stderr)


def run_round(peers, label, run_one, verbose):
    """One round of a driver: run_one(peer) -> (result, reason, tail) for
    each peer in order, with progress lines. Returns (results: {peer:
    result}, failures: {peer: reason}, probes: the cross-CPU hand-off read
    before and after the round, host_probe.py: rounds in a slow phase are
    flagged, not silently averaged in)."""
    probes = [host_probe.cross_cpu_handoff_gbps()]
    results, failures = {}, {}
    for peer in peers:
        t0 = time.monotonic()
        print(f"running {label[peer]} ...", end=" ", flush=True)
        result, reason, tail = run_one(peer)
        print(f"{'done' if result else 'n/a: ' + reason} ({time.monotonic() - t0:.1f} s)")
        if tail and (verbose or not result):
            print(f"  [{peer} job output, last lines]\n{tail}", file=sys.stderr)
        if result:
            results[peer] = result
        else:
            failures[peer] = reason
    probes.append(host_probe.cross_cpu_handoff_gbps())
    print(f"  cross-CPU hand-off before/after: {probe_text(probes)}")
    return results, failures, probes


def namespace_hosts(n):
    """tests/multihost/netns_hosts.NetnsHosts(n); SystemExit with the reason
    when namespaces cannot be made here."""
    sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "multihost"))
    import netns_hosts  # noqa: PLC0415
    reason = netns_hosts.unavailable_reason()
    if reason:
        raise SystemExit(f"--hosts: cannot make namespace hosts here: {reason}")
    return netns_hosts.NetnsHosts(n)


def main(argv=None):
    a = parse_args(argv)
    cfg = make_plan(a)
    env = job_env()
    meta = run_meta(a)
    print(f"allreduce benchmark: np={a.np}, {os.cpu_count()} CPUs, float32 Sum in place, "
          f"peers: {','.join(a.only)}; load {meta['loadavg_before']:.2f}")
    warn_if_busy(meta)

    rounds, errors = [], {}
    with contextlib.ExitStack() as stack:
        hosts = None
        if a.host_layout:
            hosts = stack.enter_context(namespace_hosts(a.host_layout[0]))
            meta["hosts"] = a.hosts
            print(f"over {a.host_layout[0]} namespace hosts x {a.host_layout[1]} ranks "
                  f"({', '.join(h.addr for h in hosts.hosts)})")
        workdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="hvda_bench_"))
        cfg_path = os.path.join(workdir, "config.json")
        with open(cfg_path, "w") as f:
            json.dump(cfg, f)
        meta["cross_cpu_gbps"] = []  # per round: [before, after] (host_probe.py)
        for peer in PEER_ORDER:
            if peer not in a.only:
                errors[peer] = "not selected"
        peers = [p for p in PEER_ORDER if p in a.only]
        for rnd in range(a.repeats):
            print(f"round {rnd + 1}/{a.repeats}")
            results, failures, probes = run_round(
                peers, PEER_LABEL,
                lambda peer: run_peer(peer, a, cfg_path, workdir, env, hosts), a.verbose)
            errors.update(failures)
            rounds.append(results)
            meta["cross_cpu_gbps"].append(probes)
    meta["busy_after"] = busy_processes()
    meta["loadavg_after"] = os.getloadavg()[0]

    print()
    print("Medians over iterations; per-iteration time = max over ranks. busbw = bytes*2(n-1)/n/time, "
          "GB = 1e9 B.")
    print("Ratio columns: >1 means horovod_accel is better "
          "(busbw rows: hvda/peer; time rows: peer/hvda).")
    for rnd, results in enumerate(rounds):
        if a.repeats > 1:
            print(f"\nround {rnd + 1} (cross-CPU hand-off before/after: "
                  f"{probe_text(meta['cross_cpu_gbps'][rnd])}):")
        print(render_table(results, a.sizes))
    if a.repeats > 1:
        print(f"\nover {a.repeats} rounds: each peer's median value; each same-run ratio's median "
              "[min..max] (quote these):")
        print(render_summary(rounds, a.sizes))
    for p in PEER_ORDER:
        if p in errors and errors[p] != "not selected":
            print(f"{PEER_LABEL[p]}: n/a ({errors[p]})")
    warn_if_busy_after(meta)

    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": meta, "config": cfg, "rounds": rounds, "errors": errors}, f, indent=1)
    return 0 if any(rounds) else 1


if __name__ == "__main__":
    sys.exit(main())
