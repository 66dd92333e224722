"""Shared by the wheel tests (test_wheels.py, test_wheels_in_container.py):
builds every wheel once per session with scripts/build_wheels.sh (the
`wheels` fixture in conftest.py), and runs commands under hard timeouts."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PLUGINS = ("gcu", "cuda")
# Gloo, the core and 2 plugins from scratch with the zig toolchain on 2 cores
# (zig builds its libc++ once per cache) take ~6 min; with margin.
BUILD_TIMEOUT = 1800


def run(cmd, timeout, **kw):
    """Runs cmd in its own process group; on timeout kills the whole group
    (compilers, ranks) and fails the test with the output so far."""
    t0 = time.monotonic()
    p = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True, **kw)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        pytest.fail(f"{' '.join(map(str, cmd))} did not finish within {timeout} s\n"
                    f"--- stdout:\n{out[-6000:]}\n--- stderr:\n{err[-6000:]}")
    r = subprocess.CompletedProcess(p.args, p.returncode, out, err)
    r.elapsed = time.monotonic() - t0
    return r


def tail(r, n=6000):
    return f"\n--- rc={r.returncode}\n--- stdout:\n{r.stdout[-n:]}\n--- stderr:\n{r.stderr[-n:]}"


def build_wheels(dist):
    """{distribution name: wheel path} of every wheel, built into dist."""
    r = run(["bash", REPO / "scripts" / "build_wheels.sh", dist], BUILD_TIMEOUT, cwd=str(REPO))
    assert r.returncode == 0, "scripts/build_wheels.sh failed" + tail(r)
    print(f"\nscripts/build_wheels.sh took {r.elapsed:.0f} s")
    found = {whl.name.split("-")[0]: whl for whl in Path(dist).glob("*.whl")}
    expected = {"horovod_accel"} | {f"horovod_accel_{p}" for p in PLUGINS}
    assert set(found) == expected, f"wheels built: {sorted(found)}, expected {sorted(expected)}" + tail(r)
    return found


def build_sdist(out):
    """The path of the core's sdist, built into out."""
    r = run([sys.executable, REPO / "setup.py", "-q", "sdist", "-d", out], 300, cwd=str(REPO))
    assert r.returncode == 0, "setup.py sdist failed" + tail(r)
    found = sorted(Path(out).glob("horovod_accel-*.tar.gz"))
    assert len(found) == 1, f"sdist built: {found}" + tail(r)
    return found[0]
