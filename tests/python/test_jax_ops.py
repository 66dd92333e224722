"""horovod.jax's public API and eager path, multi-process through the real
launcher.

- jax_scripts/eager_ops.py at np 1, 2, 3 (one job each): every op and
  dtype (bfloat16 and bool where they apply) against exact values, scaling,
  ragged allgather, uneven alltoall, reducescatter with dim 0 not divisible
  by the size, broadcast from every root, zero-length arrays, a process set
  and its non-member, pytrees and object collectives, barrier and join,
  argument errors, a cross-rank mismatch, and the ops inside jax.jit
  (through the public functions) against the eager results;
- `import horovod.jax` is horovod_accel.jax and imports neither the core
  nor another framework.
Every job has a hard timeout.
"""
import sys

import pytest

from launch_util import REPO, assert_every_rank_passed, check_names, horovodrun_script, run

pytest.importorskip("jax", reason="jax is not installed in this environment")

SCRIPT = REPO / "tests" / "python" / "jax_scripts" / "eager_ops.py"
TIMEOUT = 150


@pytest.mark.parametrize("np_", [1, 2, 3])
def test_eager_ops(np_):
    names = check_names(SCRIPT)
    assert len(names) >= 15, names
    assert_every_rank_passed(horovodrun_script(np_, SCRIPT, timeout=TIMEOUT), np_, names)


def test_alias_resolves_and_imports_no_core_or_other_framework():
    r = run([sys.executable, "-c",
             "import sys, horovod.jax as hvd, horovod_accel.jax as m; "
             "print(hvd is m, hvd.allreduce is m.allreduce, 'horovod_accel._core' in sys.modules, "
             "sorted({n.split('.')[0] for n in sys.modules} & "
             "{'torch', 'tensorflow', 'keras', 'mxnet'}))"], 60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split() == ["True", "True", "False", "[]"], r.stdout + r.stderr
