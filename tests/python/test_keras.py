"""horovod.tensorflow.keras / horovod.keras (Keras 3), multi-process through
horovodrun: keras_checks.py at np 1, 2 and 3 (model.fit with
DistributedOptimizer gives identical weights, equals single-process
training, metric averaging, warm-up and schedule LRs,
backward_passes_per_step, checkpoint on rank 0 and resume through
load_model + broadcast, sparse embeddings, jit_compile), the same checks
under KERAS_BACKEND=torch at np 2, and the three TensorFlow examples, which
must reach > 90% test accuracy with 2 processes. Hard timeouts on every job."""
import importlib.util
import re

import pytest

from launch_util import REPO, assert_every_rank_passed, check_names, horovodrun_script, tail

SCRIPT = REPO / "tests" / "python" / "tf_api_scripts" / "keras_checks.py"
TIMEOUT = 300

if importlib.util.find_spec("tensorflow") is None:
    pytest.skip("tensorflow is not installed (pip install tensorflow-cpu==2.21.0)",
                allow_module_level=True)


@pytest.mark.parametrize("np_", [1, 2, 3])
def test_keras_checks(np_, tmp_path):
    r = horovodrun_script(np_, SCRIPT, tmp_path, timeout=TIMEOUT, TF_CPP_MIN_LOG_LEVEL=2)
    names = check_names(SCRIPT)
    assert len(names) >= 8, names
    assert_every_rank_passed(r, np_, names)


def test_keras_checks_with_torch_backend(tmp_path):
    pytest.importorskip("torch")
    r = horovodrun_script(2, SCRIPT, tmp_path, timeout=TIMEOUT, KERAS_BACKEND="torch")
    names = [n for n in check_names(SCRIPT)
             if n not in ("jit_compile_true_is_refused_clearly", "sparse_embedding_model_fit")]
    assert_every_rank_passed(r, 2, names)


EXAMPLES = ["tensorflow2/tensorflow2_mnist_like.py", "keras/keras_mnist_like.py",
            "tensorflow/tensorflow_mnist_like.py"]


def test_examples_train_to_90_percent(tmp_path):
    for example in EXAMPLES:
        args = ["--checkpoint-dir", tmp_path / "tf1"] if example.startswith("tensorflow/") else []
        r = horovodrun_script(2, REPO / "examples" / example, *args, timeout=TIMEOUT,
                              TF_CPP_MIN_LOG_LEVEL=2)
        assert r.returncode == 0, f"{example} failed" + tail(r)
        m = re.search(r"^\[0\]<stdout>:final test accuracy ([\d.]+)%", r.stdout, re.M)
        assert m and float(m.group(1)) > 90, f"{example}: no accuracy above 90%" + tail(r)
    # The TF1 script checkpoints on rank 0 only (MonitoredTrainingSession).
    assert list((tmp_path / "tf1").glob("model.ckpt-*.index")), "rank 0 wrote no checkpoint"
