"""Runs the case matrix on every rank and reports (see docs/conformance.md).

Per case, every rank:
1. runs the case if it is a member of the case's process set (exceptions
   are caught and recorded: the rank always goes on to step 2);
2. joins the case's status exchange: an allreduce (Sum) of a CPU int32
   vector with one entry per rank holding that rank's status, named
   `conf.<index>.status`. Every rank thus learns every rank's status for the
   case, and the exchange keeps the ranks in step: a rank whose case failed
   before it submitted a collective waits here, the others' case op then
   fails (deadlock detection), they arrive here too, and the exchange is
   retried under the same name until everyone meets; a deadlock ends the
   job generation, so each rank first re-initializes Horovod with the
   suite's process sets (docs/design/never_hang.md). One rank's failure
   cannot shift the names of the later cases. On an accelerator the vector
   also carries, per rank, the collectives the device plugin ran during
   the case and the elements the rank put on the device: a case that
   passed on values but moved data without the plugin running anything on
   some member rank fails there ("Proof that the plugin ran it",
   docs/conformance.md).
At the end the failure details are gathered (allgather_object) and rank 0
prints the report; its last line is `conformance: P passed, F failed`.
Exit status: 0 if F == 0, 1 if F > 0 (on every rank), 2 if the device is
not available or the arguments are wrong.
"""
import argparse
import os
import re
import sys
import time
import traceback

import torch

from horovod_accel.common import settings
from horovod_accel.common.default_runtime import DEFAULT_RUNTIME
from horovod_accel.conformance.cases import Ctx, build_cases, process_set_ranks

SKIP, PASS, UNSUPPORTED, FAIL = 0, 1, 2, 3
STATUS_NAMES = {SKIP: "SKIP", PASS: "PASS", UNSUPPORTED: "UNSUPPORTED", FAIL: "FAIL"}
SYNC_ATTEMPTS = 4
DETAIL_MAX_CHARS = 600
_UNSUPPORTED_RE = re.compile(r"\b(not supported|unsupported)\b", re.I)


class DeviceUnavailable(Exception):
    pass


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="python -m horovod_accel.conformance",
        description="Horovod collective conformance suite: every op x dtype x reduce op x count "
                    "x process set on one device; run it under horovodrun at several -np. "
                    "The last line rank 0 prints is 'conformance: P passed, F failed'.")
    p.add_argument("--device", required=True,
                   help="'cpu' or a torch device type (cuda, gcu, ...): each rank uses "
                        "torch.device(NAME, local_rank); with --memory plugin, the device "
                        "type of a loaded device plugin")
    p.add_argument("--memory", choices=("framework", "plugin"), default="framework",
                   help="where the tested buffers live: 'framework' (default): torch tensors "
                        "on the device; 'plugin': memory from the device plugin's mem_alloc, "
                        "for a plugin without a framework device (no torch device needed)")
    p.add_argument("--quick", action="store_true",
                   help="a smaller matrix for CI smoke runs: counts 0, 1, 1031 (0, 1031 on the "
                        "non-global sets), broadcast from the first and last rank of each set, "
                        "fewer variants, variants on the global set only")
    p.add_argument("--filter", default=None, metavar="SUBSTR",
                   help="only run cases whose name contains SUBSTR")
    p.add_argument("--verbose", action="store_true", help="one line per case (rank 0)")
    p.add_argument("--max-failures-shown", type=int, default=20, metavar="K",
                   help="detail at most K failing cases (default 20)")
    p.add_argument("--list", action="store_true",
                   help="print the case names (for this job's size) and exit without running")
    # Corrupts one case's expectation on the last rank, to show the suite
    # catches and reports a wrong result (tests/python/test_conformance.py).
    p.add_argument("--self-test-fail", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.max_failures_shown < 0:
        p.error("--max-failures-shown must be >= 0")
    if args.memory == "plugin" and args.device == "cpu":
        p.error("--memory plugin needs the device type of a device plugin, not 'cpu' (the CPU "
                "is served by the core itself)")
    return args


def resolve_device(name, local_rank):
    """The torch.device this rank tests on; DeviceUnavailable if torch has no
    such device type or no device for this local rank. Selects it as the
    current device where torch.<name>.set_device exists."""
    if name == "cpu":
        return torch.device("cpu")
    if ":" in name:
        raise DeviceUnavailable(f"--device takes a device type ('cuda', 'gcu'), not {name!r}: "
                                f"each rank uses its local rank as the index")
    try:
        torch.device(name)
    except (RuntimeError, ValueError) as e:
        raise DeviceUnavailable(f"torch does not know the device type {name!r} ({e}); is its "
                                f"torch extension installed and imported?") from None
    mod = getattr(torch, name, None)
    if mod is not None and callable(getattr(mod, "is_available", None)):
        try:
            available = mod.is_available()
        except Exception as e:  # noqa: BLE001 - any failure means unusable
            raise DeviceUnavailable(f"torch.{name}.is_available() raised {e!r}") from None
        if not available:
            raise DeviceUnavailable(f"torch.{name}.is_available() is False")
    if mod is not None and callable(getattr(mod, "device_count", None)):
        count = mod.device_count()
        if count == 0:
            raise DeviceUnavailable(f"torch.{name}.device_count() is 0")
        if local_rank >= count:
            raise DeviceUnavailable(f"local rank {local_rank} needs device {name}:{local_rank}, "
                                    f"but torch.{name}.device_count() is {count}")
    device = torch.device(name, local_rank)
    if mod is not None and callable(getattr(mod, "set_device", None)):
        try:
            mod.set_device(local_rank)
        except Exception as e:  # noqa: BLE001
            raise DeviceUnavailable(f"torch.{name}.set_device({local_rank}) failed: {e}") from None
    try:
        probe = torch.arange(4, dtype=torch.float32).to(device)
        if probe.cpu().tolist() != [0.0, 1.0, 2.0, 3.0]:
            raise RuntimeError("a copy to the device and back changed the values")
    except Exception as e:  # noqa: BLE001
        raise DeviceUnavailable(f"cannot use {device}: {type(e).__name__}: {e}") from None
    return device


def planned_size():
    """The job's size before init(): horovodrun's HOROVOD_SIZE, else the MPI
    launcher's (a job started by mpirun is formed from MPI by init())."""
    if "HOROVOD_SIZE" in os.environ:
        return int(os.environ["HOROVOD_SIZE"])
    from horovod_accel.common import mpi  # noqa: PLC0415
    launched = mpi.launcher()
    return launched[1] if launched is not None else 1


def init_horovod(hvd):
    """hvd.init() with the suite's process sets; returns {label: (ProcessSet,
    ranks)} and a description. The 'ends' set ([0, size-1], size >= 3) is
    registered statically through init(process_sets=[...]); the 'tail' set
    (ranks 1..size-1, size >= 2) dynamically with add_process_set after init
    (HOROVOD_DYNAMIC_PROCESS_SETS=1, set here before init)."""
    size = planned_size()
    planned = process_set_ranks(size)
    static = [hvd.ProcessSet(ranks) for _, ranks, how in planned if how == "static"]
    if size >= 2:
        os.environ["HOROVOD_DYNAMIC_PROCESS_SETS"] = "1"
    hvd.init(process_sets=static)
    if hvd.size() != size:
        raise RuntimeError(f"the launcher started {size} processes but hvd.size() is {hvd.size()}")
    sets, statics, described = {}, iter(static), []
    for label, ranks, how in planned:
        if how == "global":
            ps = hvd.global_process_set
        elif how == "static":
            ps = next(statics)
        else:
            ps = hvd.add_process_set(ranks)
        sets[label] = (ps, ranks)
        described.append(label if how == "global" else f"{label} ({how})")
    return sets, "; ".join(described)


def realigner(hvd, ctx):
    """After a deadlock (a rank failed a case before submitting its op) the
    job generation has ended on every rank, and each was told by an op's
    error: start the next one, with the suite's process sets registered
    again (NOTE [A deadlock ends the generation] in csrc/common/coordinator.h).
    A no-op while the generation lives."""
    def realign():
        if DEFAULT_RUNTIME.is_initialized() and DEFAULT_RUNTIME.runtime().generation_end_told():
            ctx.process_sets, _ = init_horovod(hvd)
    return realign


def _one_line(text):
    text = " ".join(str(text).split())
    return text if len(text) <= DETAIL_MAX_CHARS else text[:DETAIL_MAX_CHARS - 3] + "..."


def run_case(ctx, case, verbose):
    """(status, detail) of this rank for one case."""
    if not ctx.is_member(case):
        return SKIP, None
    try:
        problems = case.fn(ctx, case, **case.kw)
    except Exception as e:  # noqa: BLE001 - every failure is recorded, never raised
        if verbose:
            traceback.print_exc()
        detail = _one_line(f"{type(e).__name__}: {e}")
        if isinstance(e, NotImplementedError) or _UNSUPPORTED_RE.search(str(e)):
            if ctx.device.type == "cpu":
                return FAIL, "refused as unsupported, but the CPU must support every case: " + detail
            return UNSUPPORTED, detail
        return FAIL, detail
    if problems:
        more = f" (and {len(problems) - 3} more problems)" if len(problems) > 3 else ""
        return FAIL, _one_line("; ".join(problems[:3]) + more)
    return PASS, None


class SyncLost(Exception):
    pass


def exchange_status(hvd, case, status, calls=0, elements=0, realign=lambda: None):
    """Every rank's (status, plugin calls, device elements) for the case (a
    list indexed by rank), through an allreduce of CPU tensors, retried
    under the same name (see module doc); realign() runs before each retry."""
    error = None
    for _ in range(SYNC_ATTEMPTS):
        vec = torch.zeros(hvd.size(), 3, dtype=torch.int64)
        vec[hvd.rank()] = torch.tensor([status, calls, elements])
        try:
            out = hvd.allreduce(vec, name=f"conf.{case.index}.status", op=hvd.Sum)
            return [tuple(row) for row in out.tolist()]
        except Exception as e:  # noqa: BLE001
            error = e
            realign()
    raise SyncLost(f"the status exchange after case {case.name} failed {SYNC_ATTEMPTS} times: "
                   f"{_one_line(error)}")


class PluginProof:
    """The collectives the core ran through the plugin serving the device
    type under test (`Runtime.plugin_activity`), read before and after each
    case: `delta()` is this rank's count for the case."""

    def __init__(self, device_type):
        from horovod_accel.common.default_runtime import DEFAULT_RUNTIME  # noqa: PLC0415
        self.device_type = device_type
        self._rt = DEFAULT_RUNTIME.initialized_runtime()
        self._last = self.counts()

    def counts(self):
        return self._rt.plugin_activity(self.device_type)

    def delta(self):
        now = self.counts()
        d = sum(now.values()) - sum(self._last.values())
        self._last = now
        return d

    def describe(self, start):
        now = self.counts()
        return ", ".join(f"{k} {now[k] - start[k]}" for k in now if now[k] != start[k]) or "none"


def unproven_ranks(rows):
    """Member ranks (status != SKIP) that ran no plugin collective although
    the case put data on the device somewhere; [] when no member did."""
    if sum(r[2] for r in rows if r[0] != SKIP) == 0:
        return []
    return [rank for rank, r in enumerate(rows) if r[0] != SKIP and r[1] == 0]


def combine(statuses):
    """The case's status over all ranks: FAIL if any rank failed, else
    UNSUPPORTED if any refused it, else PASS (non-members skip)."""
    if FAIL in statuses or not any(s != SKIP for s in statuses):
        return FAIL
    if UNSUPPORTED in statuses:
        return UNSUPPORTED
    return PASS


def _ranks(rs):
    return ("rank " if len(rs) == 1 else "ranks ") + ",".join(map(str, rs))


def print_report(cases, final, per_rank_details, max_shown, elapsed, device, size):
    """Rank 0's report: the failing cases (details grouped by identical text),
    then the summary lines; the last line is 'conformance: P passed, F failed'."""
    failed = [c for c in cases if final[c.index][0] == FAIL]
    unsupported = [c for c in cases if final[c.index][0] == UNSUPPORTED]
    passed = len(cases) - len(failed) - len(unsupported)
    for c in failed[:max_shown]:
        print(f"FAILED {c.name}")
        by_text = {}
        for rank, details in enumerate(per_rank_details):
            if c.index in details:
                status, text = details[c.index]
                if status == FAIL:
                    by_text.setdefault(text, []).append(rank)
        for text, rs in by_text.items():
            print(f"    {_ranks(rs)}: {text}")
        if not by_text:
            print("    no rank ran it")
    if len(failed) > max_shown:
        print(f"... and {len(failed) - max_shown} more failed cases (--max-failures-shown)")
    if unsupported:
        for c in unsupported[:max_shown]:
            texts = sorted({d[c.index][1] for d in per_rank_details if c.index in d})
            print(f"UNSUPPORTED {c.name}: {texts[0] if texts else ''}")
    print(f"conformance: {len(cases)} cases on {device}, {size} rank{'s' if size != 1 else ''}, "
          f"in {elapsed:.1f} s")
    if unsupported:
        print(f"conformance: {len(unsupported)} unsupported: "
              + ", ".join(c.name for c in unsupported))
    print(f"conformance: {passed} passed, {len(failed)} failed", flush=True)
    return len(failed)


def _unavailable(rank, name, why):
    print(f"conformance: rank {rank}: device {name!r} is not available: {why}", file=sys.stderr,
          flush=True)
    return 2


def attach_plugin(hvd, args, device):
    """(hvd or its PluginOps, device, PluginProof or None) once hvd is
    initialized: plugin memory binds this rank's accelerator; on any device
    but the CPU the plugin serving it is looked up for the proof.
    DeviceUnavailable when no loaded device plugin serves the type."""
    if args.memory == "framework" and device.type == "cpu":
        return hvd, device, None
    from horovod_accel.conformance.plugin_memory import PluginOps  # noqa: PLC0415
    try:
        proof = PluginProof(args.device if args.memory == "plugin" else device.type)
        if args.memory == "framework":
            return hvd, device, proof
        ops = PluginOps(hvd, args.device, hvd.local_rank())
    except ValueError as e:
        raise DeviceUnavailable(f"{e}. Name the plugin in HOROVOD_ACCEL_PLUGINS (or install "
                                f"it); `horovodrun --check-build` lists the loaded plugins") \
            from None
    return ops, ops.device, proof


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    rank_env = settings.read("HOROVOD_RANK")
    if args.list:
        if rank_env == 0:
            cases = [c for c in build_cases(planned_size(), args.quick)
                     if args.filter is None or args.filter in c.name]
            print("\n".join(c.name for c in cases))
        return 0
    device = torch.device("cpu")
    if args.memory == "framework":
        try:
            device = resolve_device(args.device, settings.read("HOROVOD_LOCAL_RANK"))
        except DeviceUnavailable as e:
            return _unavailable(rank_env, args.device, e)

    if "OMP_NUM_THREADS" not in os.environ:
        # The host-side expectations are small; torch's default of one
        # intra-op thread per core in every rank oversubscribes a host
        # running several ranks (10-20x slower on 2 cores at -np 4).
        torch.set_num_threads(1)
    import horovod_accel.torch as hvd
    sets, sets_text = init_horovod(hvd)
    rank, size = hvd.rank(), hvd.size()
    try:
        ops, device, proof = attach_plugin(hvd, args, device)
    except DeviceUnavailable as e:
        code = _unavailable(rank, args.device, e)
        hvd.shutdown()
        return code
    proof_start = proof.counts() if proof is not None else None
    cases = [c for c in build_cases(size, args.quick)
             if args.filter is None or args.filter in c.name]
    for i, c in enumerate(cases):
        c.index = i
    ctx = Ctx(ops, device, sets, self_test_fail=args.self_test_fail)
    realign = realigner(hvd, ctx)
    if rank == 0:
        print(f"conformance: device {args.device} ({device} on rank 0), {size} "
              f"rank{'s' if size != 1 else ''}, process sets: {sets_text}; {len(cases)} cases "
              f"({'quick' if args.quick else 'default'} matrix"
              f"{'' if args.filter is None else f', filter {args.filter!r}'})", flush=True)
        if proof is not None:
            print(f"conformance: {args.memory} memory; each case must run in the device plugin "
                  f"serving {proof.device_type!r} on every member rank", flush=True)
        if not cases:
            print(f"conformance: no case name contains {args.filter!r} (--list shows them)")

    t_start = time.monotonic()
    details = {}          # case index -> (status, detail) for this rank's non-passes
    final = {}            # case index -> (combined status, [status per rank])
    lost = None
    for case in cases:
        t0 = time.monotonic()
        ctx.device_elements = 0
        status, detail = run_case(ctx, case, args.verbose)
        calls = proof.delta() if proof is not None else 0
        if detail is not None:
            details[case.index] = (status, detail)
        try:
            rows = exchange_status(hvd, case, status, calls, ctx.device_elements, realign)
        except SyncLost as e:
            lost = (case, str(e))
            break
        statuses = [r[0] for r in rows]
        if proof is not None and combine(statuses) == PASS:
            unproven = unproven_ranks(rows)
            if unproven:
                statuses = [FAIL if r in unproven else s for r, s in enumerate(statuses)]
                if rank in unproven:
                    details[case.index] = (FAIL, f"the values are right, but no collective ran "
                                                 f"in the {proof.device_type!r} device plugin "
                                                 f"on this rank during the case: the op took "
                                                 f"another path")
        final[case.index] = (combine(statuses), statuses)
        if args.verbose and rank == 0:
            st = final[case.index][0]
            bad = [r for r, s in enumerate(statuses) if s == st] if st != PASS else []
            print(f"{STATUS_NAMES[st]:<11} {case.name}  ({(time.monotonic() - t0) * 1e3:.1f} ms"
                  f"{', ' + _ranks(bad) if bad else ''})", flush=True)
    elapsed = time.monotonic() - t_start

    if lost is not None:
        # The ranks can no longer meet: report what this rank knows and stop.
        case, why = lost
        for c in cases[case.index:]:
            final[c.index] = (FAIL, [])
            details.setdefault(c.index, (FAIL, f"not run: {why}" if c is not case else why))
        print(f"conformance: rank {rank}: aborted at case {case.name}: {why}", file=sys.stderr,
              flush=True)
        if rank == 0:
            print_report(cases, final, [details], args.max_failures_shown, elapsed, device, size)
        else:
            time.sleep(2)  # let rank 0 print before the launcher stops the job
        sys.stdout.flush()
        os._exit(1)

    try:
        everyone = hvd.allgather_object(details, name="conf.details")
    except Exception as e:  # noqa: BLE001 - still report what this rank knows
        print(f"conformance: rank {rank}: gathering the failure details failed: {_one_line(e)}; "
              f"the report shows rank {rank}'s only", file=sys.stderr, flush=True)
        everyone = [details if r == rank else {} for r in range(size)]
    n_failed = sum(1 for c in cases if final[c.index][0] == FAIL)
    if rank == 0:
        if proof is not None:
            print(f"conformance: collectives rank 0 ran in the {proof.device_type!r} plugin: "
                  f"{proof.describe(proof_start)}", flush=True)
        print_report(cases, final, everyone, args.max_failures_shown, elapsed, device, size)
    sys.stdout.flush()
    # Rank 0 has printed its last line before anyone may exit.
    try:
        hvd.barrier()
        hvd.shutdown()
    except Exception as e:  # noqa: BLE001 - the verdict stands
        print(f"conformance: rank {rank}: final barrier/shutdown failed: {_one_line(e)}",
              file=sys.stderr, flush=True)
    return 1 if n_failed else 0
