"""The two kinds of enqueue binding (the METH_FASTCALL per-op allreduce and
the pybind11 definitions of the other ops), and the torch adapter's two
allreduce paths, refuse the same bad arguments with the same exception and
message and give the same results for the same good ones (NOTE [One home for
enqueue rules] in csrc/python/enqueue_args.h). The checks run in
semantics_scripts/enqueue_paths_agree.py, on every rank."""
import pytest
from test_core_semantics import assert_ok, launch, plain


def test_paths_agree_without_the_launcher():
    assert_ok(plain("enqueue_paths_agree.py"), "enqueue_paths_agree", 1)


@pytest.mark.parametrize("np_", [1, 2])
def test_paths_agree(np_):
    assert_ok(launch(np_, "enqueue_paths_agree.py"), "enqueue_paths_agree", np_)
