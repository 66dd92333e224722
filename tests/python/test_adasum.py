"""Adasum (op=hvd.Adasum) through the real launcher: allreduce against a
locally computed float64 reference, grouped/scaled/in-place variants,
argument errors, and DistributedOptimizer(op=hvd.Adasum) (upstream's
delta-based optimizer) against a reference of its semantics, plus an Adam
run with falling loss and identical parameters on every rank. Odd world
sizes exercise the pass-through of an unpaired rank. Every subprocess has a
hard timeout; nothing asserts on time.
"""
from pathlib import Path

import pytest

from launch_util import assert_every_rank_passed, check_names, horovodrun_script

SCRIPT = Path(__file__).resolve().parent / "training_scripts" / "adasum_checks.py"
TIMEOUT = 120

pytest.importorskip("torch")


@pytest.mark.parametrize("np", [2, 3, 4])
def test_adasum_checks(np):
    r = horovodrun_script(np, SCRIPT, timeout=TIMEOUT)
    names = check_names(SCRIPT)
    assert len(names) >= 5, names
    assert_every_rank_passed(r, np, names)
