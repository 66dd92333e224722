"""horovod.tensorflow above the op layer, multi-process through horovodrun at
np 1, 2 and 3: one launch per size runs every check of
tf_api_scripts/tf_checks.py (DistributedGradientTape averages, options,
sparse gradients, PartialDistributedGradientTape, public allreduce,
broadcasts, objects, SyncBatchNormalization, the TF1 DistributedOptimizer in
a MonitoredTrainingSession with BroadcastGlobalVariablesHook, and
backward_passes_per_step). Every launch has a hard timeout."""
import importlib.util

import pytest

from launch_util import REPO, assert_every_rank_passed, check_names, horovodrun_script

SCRIPT = REPO / "tests" / "python" / "tf_api_scripts" / "tf_checks.py"
TIMEOUT = 240

if importlib.util.find_spec("tensorflow") is None:
    pytest.skip("tensorflow is not installed (pip install tensorflow-cpu==2.21.0)",
                allow_module_level=True)


@pytest.mark.parametrize("np_", [1, 2, 3])
def test_tf_api_checks(np_):
    r = horovodrun_script(np_, SCRIPT, timeout=TIMEOUT, TF_CPP_MIN_LOG_LEVEL=2)
    names = check_names(SCRIPT)
    assert len(names) >= 12, names
    assert_every_rank_passed(r, np_, names)
