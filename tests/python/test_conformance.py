"""The conformance suite (`python -m horovod_accel.conformance`, docs/conformance.md).

Through the real launcher, each job under a hard timeout:
- the quick matrix at np 1, 2, 3, 4 and the default matrix at np 1 and 4
  pass on the CPU (final line `conformance: P passed, 0 failed`, P > 0 and
  equal to the number of cases announced);
- the suite catches errors: a deliberately corrupted expectation on one rank
  (hidden `--self-test-fail`) is reported as one failed case naming the case,
  the rank and the first mismatch, with exit status 1;
- a case failing on one rank before it submits its collective costs that
  case only (the status exchange realigns the ranks).
In-process: expectations, comparisons, failure classification and the
report format, without a job.
"""
import re
import sys
import textwrap

import pytest
import torch

from launch_util import horovodrun, run, tail

from horovod_accel.conformance import cases as C
from horovod_accel.conformance import expect as E
from horovod_accel.conformance import run_suite as R
from horovod_accel.conformance import values as V

SUITE = ["-m", "horovod_accel.conformance", "--device", "cpu"]
FINAL_RE = re.compile(r"^conformance: (\d+) passed, (\d+) failed$")


def run_suite(np_, *args, timeout, script_args=None, **env):
    cmd = script_args if script_args is not None else SUITE
    return horovodrun(["-np", np_, sys.executable, *cmd, *args], timeout, **env)


def rank0_lines(r):
    return re.findall(r"^\[0\]<stdout>:(.*)$", r.stdout, re.M)


def final_counts(r):
    """(passed, failed) from rank 0's last line, which must be the final line."""
    lines = rank0_lines(r)
    assert lines, "rank 0 printed nothing" + tail(r)
    m = FINAL_RE.match(lines[-1])
    assert m, f"rank 0's last line is not the summary: {lines[-1]!r}" + tail(r)
    return int(m.group(1)), int(m.group(2))


def announced_cases(r):
    m = re.search(r"^\[0\]<stdout>:conformance: device .*; (\d+) cases \(", r.stdout, re.M)
    assert m, "no header line" + tail(r)
    return int(m.group(1))


def assert_all_passed(r):
    assert r.returncode == 0, "suite failed" + tail(r)
    passed, failed = final_counts(r)
    assert failed == 0 and passed > 0, tail(r)
    assert passed == announced_cases(r), tail(r)
    assert not any(l.startswith(("FAILED", "UNSUPPORTED")) for l in rank0_lines(r)), tail(r)
    return passed


@pytest.mark.parametrize("np_", [1, 2, 3, 4])
def test_quick_matrix_passes_on_cpu(np_):
    r = run_suite(np_, "--quick", timeout=90)
    passed = assert_all_passed(r)
    assert passed == len(C.build_cases(np_, quick=True))


@pytest.mark.parametrize("np_", [1, 4])
def test_default_matrix_passes_on_cpu(np_):
    r = run_suite(np_, timeout=180)
    passed = assert_all_passed(r)
    assert passed == len(C.build_cases(np_))


def test_corrupted_expectation_is_reported_as_one_failure():
    # The last rank (2) expects a wrong value at index 17 of one case; the
    # other ranks' checks of it pass, so only the cross-rank aggregation can
    # tell the case failed.
    r = run_suite(3, "--quick", "--self-test-fail", "--filter", "allreduce/sum/int32",
                  timeout=90)
    assert r.returncode == 1, tail(r)
    passed, failed = final_counts(r)
    assert failed == 1 and passed == announced_cases(r) - 1 and passed > 0, tail(r)
    report = "\n".join(rank0_lines(r))
    assert f"FAILED {C.SELF_TEST_CASE}\n    rank 2: output: values differ at index 17: " in report, \
        tail(r)
    assert "(1 of 1031 elements differ)" in report, tail(r)


_INJECT = textwrap.dedent("""
    import sys
    from horovod_accel.conformance import cases, run_suite

    real = cases.run_allreduce

    def run_allreduce(ctx, case, **kw):
        if case.name == "allreduce/sum/int8/n=1031/ps=global" and ctx.rank == 1:
            raise RuntimeError("injected: rank 1 fails before submitting")
        return real(ctx, case, **kw)

    cases.run_allreduce = run_allreduce
    sys.exit(run_suite.main())
""")


def test_one_sided_failure_does_not_desynchronise_the_ranks(tmp_path):
    # Rank 1 never submits the case's allreduce: the others' op fails
    # (deadlock detection), and every later case still meets by name.
    script = tmp_path / "inject.py"
    script.write_text(_INJECT)
    r = run_suite(3, "--quick", "--filter", "allreduce/", timeout=120,
                  script_args=[str(script), "--device", "cpu"],
                  HOROVOD_DEADLOCK_TIMEOUT_SECONDS=2)
    assert r.returncode == 1, tail(r)
    passed, failed = final_counts(r)
    assert failed == 1 and passed == announced_cases(r) - 1, tail(r)
    report = "\n".join(rank0_lines(r))
    assert "FAILED allreduce/sum/int8/n=1031/ps=global\n" in report, tail(r)
    assert "rank 1: RuntimeError: injected: rank 1 fails before submitting" in report, tail(r)
    assert "ranks 0,2: HorovodInternalError:" in report, tail(r)


def test_unknown_device_exits_2():
    r = run([sys.executable, "-m", "horovod_accel.conformance", "--device", "nosuchdevice"], 60)
    assert r.returncode == 2, tail(r)
    assert "device 'nosuchdevice' is not available" in r.stderr, tail(r)


def test_plugin_memory_needs_a_loaded_plugin():
    """--memory plugin without a plugin serving the type: exit 2 naming what
    to do; with 'cpu': refused at argument parsing."""
    r = run([sys.executable, "-m", "horovod_accel.conformance", "--device", "nosuchdevice",
             "--memory", "plugin"], 60)
    assert r.returncode == 2, tail(r)
    assert "device 'nosuchdevice' is not available" in r.stderr, tail(r)
    assert "no usable device plugin serves the device type 'nosuchdevice'" in r.stderr, tail(r)
    assert "HOROVOD_ACCEL_PLUGINS" in r.stderr, tail(r)
    r = run([sys.executable, "-m", "horovod_accel.conformance", "--device", "cpu",
             "--memory", "plugin"], 60)
    assert r.returncode == 2 and "not 'cpu'" in r.stderr, tail(r)


# ---------------------------------------------------------------- in-process


def test_proof_flags_members_without_plugin_activity():
    """Rows are (status, plugin calls, device elements) per rank."""
    P, S = R.PASS, R.SKIP
    assert R.unproven_ranks([(P, 3, 10), (P, 1, 0)]) == []
    # the second member ran nothing although the case moved data
    assert R.unproven_ranks([(P, 3, 10), (P, 0, 10)]) == [1]
    # a member that put nothing on the device still takes part (allgather of 0 rows)
    assert R.unproven_ranks([(P, 1, 10), (P, 0, 0), (S, 0, 0)]) == [1]
    # nothing moved anywhere (zero-length tensors, barrier): nothing to prove
    assert R.unproven_ranks([(P, 0, 0), (P, 0, 0)]) == []
    # non-members are never blamed
    assert R.unproven_ranks([(S, 0, 0), (P, 2, 5), (P, 2, 5)]) == []


def test_case_names_are_unique_and_cover_the_matrix():
    for size in (1, 2, 3, 4, 5):
        for quick in (False, True):
            names = [c.name for c in C.build_cases(size, quick)]
            assert len(names) == len(set(names))
            assert names == [c.name for c in C.build_cases(size, quick)]  # deterministic
            assert C.SELF_TEST_CASE in names
    names = [c.name for c in C.build_cases(4)]
    for op in ("sum", "average", "min", "max", "product"):
        for d in ("uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
                  "float64"):
            for n in C.COUNTS:
                for ps in ("global", "1,2,3", "0,3"):
                    assert f"allreduce/{op}/{d}/n={n}/ps={ps}" in names
    assert not [n for n in names if "bool" in n and ("allreduce" in n or "reducescatter" in n)]
    for prefix in ("allreduce_/", "grouped_allreduce/", "grouped_allreduce_/", "allgather/bool/",
                   "broadcast/bool/n=0/root=3/", "broadcast_/", "alltoall/bool/n=0/splits=tensor",
                   "alltoall/int8/n=1/splits=none", "reducescatter/average/", "barrier/",
                   "allreduce_async/", "allreduce_async_/", "allgather_async/",
                   "broadcast_async/", "alltoall_async/", "reducescatter_async/",
                   "grouped_allreduce_async/", "grouped_allgather/", "grouped_reducescatter/"):
        assert any(n.startswith(prefix) for n in names), prefix
    assert len(C.build_cases(4, quick=True)) < len(names) * 0.6


@pytest.mark.parametrize("size", [1, 2, 3, 4, 7, 16, 64])
def test_expected_values_are_exact_in_every_dtype(size):
    # reduce_expected raises SuiteError if an exact expectation is not
    # representable; summing in the dtype itself must give it exactly.
    for d in V.REDUCE_DTYPES:
        for op in C.REDUCE_OPS:
            kind = "product" if op == E.PRODUCT else "sum"
            ins = [V.reduce_input(d, (257,), r, 99, size, kind) for r in range(size)]
            exp = E.reduce_expected(ins, op)
            if op == E.SUM:
                acc = ins[0].clone()
                for x in ins[1:]:
                    acc = acc + x
                assert torch.equal(acc.to(exp.values.dtype), exp.values), d
        ins = [V.reduce_input(d, (257,), r, 7, size, "sum", scaled=True) for r in range(size)]
        E.reduce_expected(ins, E.SUM, *C.SCALE)
        E.reduce_expected(ins, E.AVERAGE, *C.SCALE)


def test_integer_average_truncates_toward_zero():
    ins = [torch.tensor([3, -3, 2, -2, 1], dtype=torch.int8),
           torch.tensor([1, -1, 2, -2, 1], dtype=torch.int8),
           torch.tensor([1, -1, 0, 0, 0], dtype=torch.int8)]
    exp = E.reduce_expected(ins, E.AVERAGE)
    assert exp.values.tolist() == [1, -1, 1, -1, 0]
    assert E.compare(torch.tensor([1, -1, 1, -1, 0], dtype=torch.int8), exp, torch.device("cpu")) \
        is None
    assert "index 1: got -2, expected -1" in E.compare(
        torch.tensor([1, -2, 1, -1, 0], dtype=torch.int8), exp, torch.device("cpu"))


def test_float_tolerance_and_exact_checks():
    cpu = torch.device("cpu")
    ins = [torch.tensor(v, dtype=torch.float16) for v in ([1.0, 0.25], [1.0, 0.5], [0.0, 0.25])]
    avg = E.reduce_expected(ins, E.AVERAGE)
    assert avg.mode == "tol"
    assert E.compare(torch.tensor([2 / 3, 1 / 3], dtype=torch.float16), avg, cpu) is None
    assert "values differ at index 0" in E.compare(torch.tensor([0.7, 1 / 3], dtype=torch.float16),
                                                    avg, cpu)
    assert "values differ" in E.compare(torch.tensor([float("nan"), 1 / 3], dtype=torch.float16),
                                        avg, cpu)
    s = E.reduce_expected(ins, E.SUM)
    assert s.mode == "exact"
    assert E.compare(torch.tensor([2.0, 1.0], dtype=torch.float16), s, cpu) is None
    assert "dtype float32, expected float16" in E.compare(torch.tensor([2.0, 1.0]), s, cpu)
    assert "shape [1, 2], expected [2]" in E.compare(
        torch.tensor([[2.0, 1.0]], dtype=torch.float16), s, cpu)
    assert "on device cpu, expected meta" in E.compare(
        torch.tensor([2.0, 1.0], dtype=torch.float16), s, torch.device("meta"))


def test_movement_is_compared_bit_for_bit():
    cpu = torch.device("cpu")
    want = E.movement(torch.tensor([0.0, float("nan"), 1.0]))
    assert E.compare(torch.tensor([0.0, float("nan"), 1.0]), want, cpu) is None
    msg = E.compare(torch.tensor([-0.0, float("nan"), 1.0]), want, cpu)
    assert "index 0: got -0.0 (0x80000000), expected 0.0 (0x00000000)" in msg
    x = V.movement_input(torch.bool, (64,), 0, 1)
    assert E.compare(x.clone(), E.movement(x), cpu) is None
    flipped = x.clone()
    flipped[5] = ~flipped[5]
    assert "index 5: got" in E.compare(flipped, E.movement(x), cpu)
    assert "(1 of 64 elements differ)" in E.compare(flipped, E.movement(x), cpu)


class _FakeCtx:
    def __init__(self, device_type):
        self.device = torch.device(device_type)

    def is_member(self, case):
        return True


def _case(fn):
    return C.Case("allreduce/sum/int8/n=1/ps=global", "global", fn, {}, 0)


def _refuse(ctx, case):
    raise RuntimeError("gcu: bfloat16 Product is not supported by this device")


def test_unsupported_only_off_the_cpu():
    assert R.run_case(_FakeCtx("meta"), _case(_refuse), False)[0] == R.UNSUPPORTED
    status, detail = R.run_case(_FakeCtx("cpu"), _case(_refuse), False)
    assert status == R.FAIL and "the CPU must support every case" in detail
    assert R.run_case(_FakeCtx("cpu"), _case(lambda ctx, case: ["bad"]), False) == (R.FAIL, "bad")
    assert R.run_case(_FakeCtx("cpu"), _case(lambda ctx, case: []), False) == (R.PASS, None)


def test_report_format(capsys):
    cases = [C.Case(f"op/c{i}/ps=global", "global", None, {}, i) for i in range(4)]
    final = {0: (R.PASS, []), 1: (R.FAIL, []), 2: (R.UNSUPPORTED, []), 3: (R.PASS, [])}
    details = [{1: (R.FAIL, "output: values differ")},
               {1: (R.FAIL, "output: values differ"), 2: (R.UNSUPPORTED, "not supported")}]
    assert R.print_report(cases, final, details, 20, 1.0, torch.device("cpu"), 2) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "FAILED op/c1/ps=global"
    assert out[1] == "    ranks 0,1: output: values differ"
    assert out[-2] == "conformance: 1 unsupported: op/c2/ps=global"
    assert out[-1] == "conformance: 2 passed, 1 failed"
