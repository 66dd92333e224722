"""Horovod's collectives inside jax.jit, multi-process through the real
launcher (jax_scripts/jit_ops.py at np 1, 2, 3: every op and dtype, grouped
ops, zero-length shapes, gradients, loops, ordering under delays, donation,
vmap, process sets, names, and the named errors of a mismatch, a ragged
allgather and a deadlock, then a new job), and the FFI library's contract:
it needs nothing of jaxlib or Python at load time. Every job has a hard
timeout."""
import subprocess

import pytest

from launch_util import (REPO, assert_every_rank_passed, check_names, horovodrun,
                         horovodrun_script)

pytest.importorskip("jax", reason="jax is not installed: `bash scripts/setup.sh` installs it")
LIBRARY = REPO / "horovod_accel" / "jax" / "libhvda_jax.so"
SCRIPT = REPO / "tests" / "python" / "jax_scripts" / "jit_ops.py"


@pytest.mark.parametrize("np_", [1, 2, 3])
def test_collectives_inside_jit(np_):
    names = check_names(SCRIPT)
    assert len(names) >= 15, names
    assert_every_rank_passed(horovodrun_script(np_, SCRIPT, timeout=240), np_, names)


def test_ffi_library_links_no_framework():
    assert LIBRARY.exists(), f"{LIBRARY} is not built: rebuild with jaxlib installed"
    deps = subprocess.run(["ldd", str(LIBRARY)], capture_output=True, text=True).stdout
    for lib in ("python", "jax", "xla", "_core"):
        assert lib not in deps.lower(), deps
    exported = subprocess.run(["nm", "-D", "--defined-only", str(LIBRARY)], capture_output=True,
                              text=True).stdout.split()
    assert "hvda_jax_collective_cpu" in exported and "hvda_jax_set_core_api" in exported


def test_check_build_lists_jax():
    r = horovodrun(["--check-build"], 120)
    assert r.returncode == 0 and "    [X] JAX" in r.stdout, r.stdout + r.stderr
