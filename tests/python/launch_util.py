"""Running jobs through the real launcher (`python -m
horovod_accel.runner.launch`) from the Python tests.

Every job runs under a hard timeout: a job that runs past it fails the test
with the output it had produced, so a hang never stalls the suite. Jobs get
PYTHONPATH=<repo> and OMP_NUM_THREADS=1, and do not inherit the outer
environment's HOROVOD_* settings (a test passes the ones it wants).
"""
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def job_env(**extra):
    """The environment of a test job: this one minus HOROVOD_*, plus extra."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOROVOD_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    env.setdefault("OMP_NUM_THREADS", "1")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _text(out):
    return out.decode(errors="replace") if isinstance(out, bytes) else (out or "")


def run(cmd, timeout, **extra_env):
    """Runs cmd (a list) with job_env(**extra_env); returns the
    CompletedProcess with `.elapsed` seconds. Fails the test on timeout."""
    t0 = time.monotonic()
    try:
        r = subprocess.run([str(c) for c in cmd], env=job_env(**extra_env), capture_output=True,
                           text=True, timeout=timeout, cwd=str(REPO))
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(map(str, cmd))} did not finish within {timeout} s\n"
                    f"--- stdout:\n{_text(e.stdout)[-6000:]}\n--- stderr:\n{_text(e.stderr)[-6000:]}")
    r.elapsed = time.monotonic() - t0
    return r


def horovodrun(launcher_args, timeout, **extra_env):
    """`horovodrun <launcher_args...>`, e.g. ["-np", 2, sys.executable, script]."""
    return run([sys.executable, "-m", "horovod_accel.runner.launch", *launcher_args], timeout,
               **extra_env)


def horovodrun_script(np_, script, *args, timeout, **extra_env):
    """`horovodrun -np np_ python script args...`."""
    return horovodrun(["-np", np_, sys.executable, script, *args], timeout, **extra_env)


def check_names(*files):
    """Names of the checks registered (decorated with @check) in worker files."""
    return [n for f in files for n in re.findall(r"@check\ndef (\w+)\(", Path(f).read_text())]


def assert_every_rank_passed(r, np_, names):
    """The job exited 0 and every rank printed `PASS <name>` for every name."""
    assert r.returncode == 0, f"rc={r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    for rank in range(np_):
        passed = set(re.findall(rf"^\[{rank}\]<stdout>:PASS (\w+)$", r.stdout, re.M))
        missing = [n for n in names if n not in passed]
        assert not missing, f"rank {rank} did not report {missing}:\n{r.stdout}\n{r.stderr}"


def tail(r, n=6000):
    """The end of a finished job's output, for assertion messages."""
    return f"\n--- rc={r.returncode}\n--- stdout:\n{r.stdout[-n:]}\n--- stderr:\n{r.stderr[-n:]}"


def assert_semantics_ok(r, area, np_):
    """The job exited 0 and np_ ranks printed 'SEMANTICS-OK <area> ...'
    (tests/python/semantics_scripts/_sem_common.done)."""
    assert r.returncode == 0, f"{area} job failed" + tail(r)
    ok = [l for l in r.stdout.splitlines() if f"SEMANTICS-OK {area} " in l]
    assert len(ok) == np_, f"{area}: expected {np_} ranks to report OK" + tail(r)
