"""Upstream's helper module `horovod.common.util`, as upstream's TensorFlow and
Keras test suites and user scripts import it (`is_version_greater_equal_than`,
`split_list`, `env`, `check_extension`, ...). In-process: these helpers start
no job and need no framework. (`horovod.tensorflow.util` is checked inside a
job by tf_api_scripts/tf_checks.py::upstream_util_module_surface.)"""
import os

import pytest

from horovod.common import util


def test_is_version_greater_equal_than():
    f = util.is_version_greater_equal_than
    assert f("2.21.0", "2.6.0") and f("2.6.0", "2.6.0") and f("2.16.0rc1", "2.9.0")
    assert not f("2.5.3", "2.6.0")
    # upstream's contract: string arguments, a major.minor.patch target
    for bad in [("2.6.0", "2.6"), (2.6, "2.6.0"), ("2.6.0", None)]:
        with pytest.raises(ValueError):
            f(*bad)


def test_split_list_and_cache():
    assert util.split_list(list(range(7)), 3) == [[0, 1, 2], [3, 4], [5, 6]]
    assert util.split_list([1], 2) == [[1], []]
    calls = []

    @util._cache
    def twice(x, k=1):
        calls.append((x, k))
        return 2 * x * k

    assert (twice(2), twice(2), twice(2, k=3), twice(2, k=3)) == (4, 4, 12, 12)
    assert calls == [(2, 1), (2, 3)]


def test_env_sets_and_restores():
    os.environ.pop("HVDA_COMPAT_A", None)
    os.environ["HVDA_COMPAT_B"] = "old"
    with util.env(HVDA_COMPAT_A="1", HVDA_COMPAT_B="new", HVDA_COMPAT_C=None):
        assert os.environ["HVDA_COMPAT_A"] == "1" and os.environ["HVDA_COMPAT_B"] == "new"
        assert "HVDA_COMPAT_C" not in os.environ
    assert "HVDA_COMPAT_A" not in os.environ and os.environ.pop("HVDA_COMPAT_B") == "old"


def test_extension_helpers():
    assert util.get_ext_suffix().endswith(".so")
    path = util.get_extension_full_path("/pkg/horovod/__init__.py", "tensorflow", "mpi_lib")
    assert path == "/pkg/horovod/tensorflow/mpi_lib" + util.get_ext_suffix()
    assert "tensorflow" in util.EXTENSIONS and "torch" in util.EXTENSIONS
    # The core is what every framework needs here: it loads in this environment.
    util.check_extension("horovod.tensorflow", "HOROVOD_WITH_TENSORFLOW", __file__, "mpi_lib")
    assert util.num_rank_is_power_2(4) and not util.num_rank_is_power_2(6)
