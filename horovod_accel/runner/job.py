"""Runs one static job: starts every rank, forwards output, watches exits.

Fail-fast contract: when any rank exits non-zero or dies by a signal, the
others get SIGTERM (to their process groups) at once and SIGKILL after
TERM_GRACE_S; horovodrun then prints which rank failed, how, and its last
stderr lines, and returns non-zero. SIGINT/SIGTERM/SIGHUP to horovodrun stop
all ranks the same way (a second one kills at once).
"""
import dataclasses
import queue
import signal
import threading
import time

from horovod_accel.runner import output, rank_process

TERM_GRACE_S = 3.0
OUTPUT_DRAIN_S = 3.0  # how long to wait for the last output once ranks are gone
_POLL_S = 0.1


@dataclasses.dataclass(kw_only=True)
class JobSpec(rank_process.LaunchSettings):
    slots: list                  # [hosts.SlotInfo], one per rank, in rank order
    store_addr: dict             # hostname -> address of the store as seen from that host
    local_hosts: set             # hostnames that are this machine (started without ssh)


class _Job:
    def __init__(self, spec):
        self.spec = spec
        self.ranks = []             # [RankProcess] in start order
        self.exited = queue.Queue()  # ranks whose process ended, in order of exit
        self.signum = None          # signal that asked horovodrun to stop
        self.signal_count = 0
        self.failed = None          # the first rank that failed (RankProcess), once run() ends
        self.launch_error = None    # why a rank could not be started, if so

    # ---- starting ----

    def _on_signal(self, signum, frame):
        self.signum = signum
        self.signal_count += 1

    def _start_rank(self, slot):
        s = self.spec
        launch = s.launcher or rank_process.launch_rank
        return launch(s, slot, s.store_addr[slot.hostname], slot.hostname not in s.local_hosts,
                      self.exited.put)

    # ---- watching ----

    def run(self):
        old = {}
        if threading.current_thread() is threading.main_thread():  # else Python refuses
            old = {sig: signal.signal(sig, self._on_signal)
                   for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        try:
            launch_error = None
            for slot in self.spec.slots:
                if self.signum is not None:
                    break
                try:
                    self.ranks.append(self._start_rank(slot))
                except rank_process.LaunchError as e:
                    launch_error = f"could not start rank {slot.rank} on {slot.hostname}: {e}"
                    break
            failed, others = self._watch(stop_now=launch_error is not None or self.signum is not None)
            self.failed, self.launch_error = failed, launch_error
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)
        self._cleanup()
        return self._report(launch_error, failed, others)

    def _watch(self, stop_now):
        """Waits for every started rank to end; returns (first failed rank,
        [other ranks that failed before being stopped])."""
        pending = set(id(r) for r in self.ranks)
        failed, others = None, []
        kill_at, killed = None, False
        if stop_now:
            kill_at = self._stop_all(signal.SIGTERM)
        while pending:
            try:
                rp = self.exited.get(timeout=_POLL_S)
            except queue.Empty:
                rp = None
            if rp is not None:
                pending.discard(id(rp))
                if rp.proc.returncode != 0 and kill_at is None:
                    failed = rp
                    output.console_message(f"rank {rp.rank} on {rp.slot.hostname} failed with "
                                           f"{rp.describe_exit()}; stopping the other ranks")
                    kill_at = self._stop_all(signal.SIGTERM)
                elif rp.proc.returncode != 0 and failed is not None and not rp.stopped_by_us:
                    others.append(rp)
            if self.signum is not None and kill_at is None:
                output.console_message(f"received {signal.Signals(self.signum).name}; stopping all "
                                       "ranks")
                kill_at = self._stop_all(signal.SIGTERM)
            if kill_at is not None and not killed and (time.monotonic() >= kill_at or
                                                       self.signal_count > 1):
                self._stop_all(signal.SIGKILL)
                killed = True  # sent once; now just wait for the exits
        return failed, others

    def _stop_all(self, sig):
        """Signals every rank still running; returns when to escalate to SIGKILL."""
        for rp in self.ranks:
            # returncode is set by the rank's waiter thread (poll() would race it).
            if rp.proc.returncode is None:
                rp.stopped_by_us = True
                rp.signal_group(sig)
        return time.monotonic() + TERM_GRACE_S

    def _cleanup(self):
        rank_process.kill_and_drain(self.ranks, OUTPUT_DRAIN_S)

    # ---- reporting ----

    def _report(self, launch_error, failed, others):
        if self.signum is not None:
            output.console_message(f"stopped by {signal.Signals(self.signum).name}")
            return 128 + self.signum
        if launch_error is not None:
            output.console_message(launch_error)
            return 1
        if failed is None:
            return 0
        how = failed.describe_exit()
        lines = [f"job failed: rank {failed.rank} (host {failed.slot.hostname}) failed with {how}."]
        if how == "signal SIGKILL":
            lines.append("(a SIGKILL nobody sent is often the out-of-memory killer; see `dmesg`)")
        tail = list(failed.err.tail)
        if tail:
            lines.append(f"last {len(tail)} line{'s' if len(tail) > 1 else ''} of rank "
                         f"{failed.rank}'s stderr:")
            lines += [f"    {t}" for t in tail]
        else:
            lines.append(f"rank {failed.rank} wrote nothing to stderr.")
        if others:
            lines.append("also failed before being stopped: " +
                         ", ".join(f"rank {o.rank} ({o.describe_exit()})" for o in others))
        if len(self.ranks) > 1:
            lines.append("the other ranks were stopped.")
        output.console_message("\n".join(lines))
        rc = failed.proc.returncode
        return 128 - rc if rc < 0 else (rc if rc < 256 else 1)


def run_job(spec):
    """Runs the job to completion; blocks; returns horovodrun's exit code
    (0 if every rank exited 0; the failed rank's code, 128+signal, or 1).
    Called from the main thread it also handles SIGINT/SIGTERM/SIGHUP while
    it runs (restoring the previous handlers afterwards)."""
    return _Job(spec).run()


def run_job_outcome(spec):
    """run_job for callers that report the failure themselves (horovod.run,
    run_api.py): returns (exit code, the first failed RankProcess or None,
    the launch error message or None, the signal that stopped the job or None)."""
    j = _Job(spec)
    code = j.run()
    return code, j.failed, j.launch_error, j.signum
