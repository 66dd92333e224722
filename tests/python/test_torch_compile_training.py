"""torch.compile'd models with DistributedOptimizer, broadcast_parameters and
broadcast_optimizer_state, multi-process through horovodrun.

One launch per rank count (1, 2, 3) runs every aot_eager check of
torch_compile_scripts/run_compile_checks.py: compiled training matches eager
(SGD, Adam, bf16 autocast, a GradScaler loop with synchronize() and
skip_synchronize() and an overflow on one rank), the ranks stay identical,
Dynamo compiles once, state broadcasts between compiled replicas (names with
`_orig_mod.`) and plain ones, clear errors for colliding names, and the
gradient hooks under a compiled backward and compiled autograd. One more
launch (2 ranks) runs the inductor checks, with an inductor cache of this
module's own. Every subprocess has a hard timeout; nothing asserts on time.
"""
import shutil

import pytest

from launch_util import REPO, assert_every_rank_passed, check_names, horovodrun_script

CHECKS = REPO / "tests" / "python" / "torch_compile_scripts" / "run_compile_checks.py"
TIMEOUT = 150

torch = pytest.importorskip("torch")
if not hasattr(torch, "compile"):
    pytest.skip("torch.compile needs torch >= 2.0", allow_module_level=True)


def _checks(inductor):
    names = [n for n in check_names(CHECKS) if n.startswith("inductor_") == inductor]
    assert len(names) >= (2 if inductor else 6), names
    return names


@pytest.fixture(scope="module")
def inductor_env(tmp_path_factory):
    """Inductor's caches in a directory of this module's (cold, shared by its
    jobs, nothing left in the user's /tmp/torchinductor_*), compiling in the
    rank's own process: a worker pool only costs time on a small host."""
    return {"TORCHINDUCTOR_CACHE_DIR": tmp_path_factory.mktemp("inductor-cache"),
            "TORCHINDUCTOR_COMPILE_THREADS": 1}


@pytest.mark.parametrize("np", [1, 2, 3])
def test_compiled_training_aot_eager(np):
    r = horovodrun_script(np, CHECKS, "aot_eager", timeout=TIMEOUT)
    assert_every_rank_passed(r, np, _checks(inductor=False))


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="inductor needs a C++ compiler")
def test_compiled_training_inductor(inductor_env):
    r = horovodrun_script(2, CHECKS, "inductor", timeout=TIMEOUT, **inductor_env)
    assert_every_rank_passed(r, 2, _checks(inductor=True))
