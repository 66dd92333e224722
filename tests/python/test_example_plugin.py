"""The vendor guide's example plugin (tests/example_plugin/, docs/vendor_guide.md):
a device whose memory is host memory, whose streams are threads and whose
collectives are the plugin's own TCP mesh, written from plugin.h alone and
built as a vendor would (a standalone CMake project,
scripts/example_plugin.sh).

- The ABI's own compatibility test: the build against a verbatim copy of the
  1.0 header passes the conformance suite in plugin memory (no framework
  device) at np 2 and 3, as does the 1.1 build (which leaves scale and
  reduce_into to the core: memory_host_accessible).
- A variant whose Sum is wrong fails the suite.
- `horovodrun --check-build` lists the plugin as usable; the plugin's own
  smoke test (every collective, a lost peer) passes at 3 processes.
"""
import re
import subprocess
import sys

import pytest

from launch_util import REPO, job_env

SCRIPT = REPO / "scripts" / "example_plugin.sh"
FINAL = re.compile(r"^\[0\]<stdout>:conformance: (\d+) passed, (\d+) failed$", re.M)


def with_plugin(variant, cmd, timeout):
    pre = ["bash", str(SCRIPT)] + (["--variant", variant] if variant else [])
    try:
        return subprocess.run(pre + cmd, env=job_env(), capture_output=True, text=True,
                              timeout=timeout, cwd=str(REPO))
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{cmd} with the example plugin ({variant or 'abi 1.2'}) did not finish in "
                    f"{timeout} s:\n{e.stdout}\n{e.stderr}")


def conformance(variant, np_):
    r = with_plugin(variant, [sys.executable, "-m", "horovod_accel.runner.launch", "-np",
                              str(np_), sys.executable, "-m", "horovod_accel.conformance",
                              "--device", "example", "--memory", "plugin", "--quick"], 600)
    out = r.stdout + r.stderr
    m = FINAL.findall(r.stdout)
    assert m, out[-6000:]
    passed, failed = map(int, m[-1])
    return r, passed, failed, out


@pytest.mark.parametrize("variant,np_", [("abi10", 2), ("abi10", 3), (None, 2), (None, 3)])
def test_example_plugin_passes_conformance(variant, np_):
    r, passed, failed, out = conformance(variant, np_)
    assert r.returncode == 0 and failed == 0 and passed > 500, out[-6000:]
    # It supports every dtype and op: nothing may be refused.
    assert "unsupported" not in r.stdout, out[-6000:]
    ran = re.search(r"collectives rank 0 ran in the 'example' plugin: (.*)", r.stdout)
    assert ran and all(k in ran.group(1) for k in
                       ("allreduce", "allgather", "broadcast", "alltoall", "reducescatter")), out


def test_example_plugin_with_a_wrong_sum_fails_conformance():
    r, _, failed, out = conformance("broken", 2)
    assert r.returncode == 1 and failed > 0, out[-6000:]
    names = re.findall(r"^\[0\]<stdout>:FAILED (\S+)$", r.stdout, re.M)
    assert names and all("/sum/" in n or "/average/" in n for n in names), names


def test_check_build_lists_the_example_plugin():
    r = with_plugin(None, [str(REPO / ".venv" / "bin" / "horovodrun"), "--check-build"], 120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"\[X\] example \S+ \(device 'example', ABI 1\.2, \S+libhorovod_accel_"
                     r"example\.so\)", r.stdout), r.stdout
    r = with_plugin("abi10", [str(REPO / ".venv" / "bin" / "horovodrun"), "--check-build"], 120)
    assert "(device 'example', ABI 1.0," in r.stdout, r.stdout


def test_example_plugin_smoke_program():
    """The plugin's own test program (tests/example_plugin/smoke_test.cc):
    every collective across 3 forked processes, and a lost peer failing
    the survivors' events within the op timeout."""
    lib = REPO / "build" / "example_plugin" / "libhorovod_accel_example.so"
    smoke = REPO / "build" / "example_plugin" / "example_plugin_smoke"
    r = with_plugin(None, ["bash", "-c", f"cmake --build {REPO / 'build' / 'example_plugin'} "
                                         f"--target example_plugin_smoke -j2 >/dev/null && "
                                         f"{smoke} {lib} 3"], 300)
    assert r.returncode == 0 and "example_plugin_smoke: OK" in r.stdout, r.stdout + r.stderr
