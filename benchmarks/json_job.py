"""One benchmark job through horovodrun whose rank 0 writes its results as
JSON to --out, for the drivers that run such jobs (device_overhead.py,
grouped.py). HOROVOD_* variables of the caller's environment are dropped so
the job runs with defaults; a failed job ends the driver with its output."""
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_json_job(np_, worker, out, worker_args=(), wrapper=(), timeout=900):
    """Runs `[*wrapper] python -m horovod_accel.runner.launch -np np_ python
    benchmarks/peers/<worker> --out out *worker_args` and returns the JSON
    rank 0 wrote to `out`."""
    cmd = [*wrapper, sys.executable, "-m", "horovod_accel.runner.launch", "-np", str(np_),
           sys.executable, str(REPO / "benchmarks" / "peers" / worker), "--out", out,
           *worker_args]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOROVOD_")}
    env["PYTHONPATH"] = str(REPO)
    env["OMP_NUM_THREADS"] = "1"
    r = subprocess.run(cmd, env=env, cwd=str(REPO), capture_output=True, text=True,
                       timeout=timeout)
    if r.returncode != 0:
        sys.exit(f"benchmark job failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}")
    with open(out) as f:
        return json.load(f)
