"""horovodrun's elastic driver: runs a job as a sequence of rounds (NOTE
[Elastic rounds] in horovod_accel/common/elastic_protocol.py) while hosts
fail, leave and arrive.

One loop thread (the caller of run()) owns all state; the discovery thread
and the per-worker wait threads only post events to its queue. Per tick:
- a worker that exits non-zero fails: its host is blacklisted and a reset
  begins (the survivors see the loss as HorovodInternalError, reset and tell
  the driver they are ready); a worker that exits 0 means training is done:
  no more resets, the job ends when the round's workers have exited;
- a discovery result that changes the plan of the current round is announced
  to the workers (hosts event); they reset at their next commit;
- once every live worker of the round is ready (or gone), the next round is
  planned (assignment.py), published and its new workers are spawned;
  workers alive but not ready READY_TIMEOUT after a reset began are stopped
  as hung;
- the job fails, with a message naming the cause, when every worker of a
  round failed, every host is blacklisted, fewer than --min-np slots stay
  available past --elastic-timeout, no survivor is left to hold the state,
  or a reset would pass --reset-limit.
"""
import dataclasses
import queue
import signal
import subprocess
import threading
import time

from horovod_accel.common import elastic_protocol as proto
from horovod_accel.runner import hosts as hosts_mod
from horovod_accel.runner import output, rank_process
from horovod_accel.runner.elastic.assignment import RoundPlan, plan_round, same_plan
from horovod_accel.runner.elastic.constants import RESET_LIMIT_EXCEEDED_MESSAGE
from horovod_accel.runner.elastic.discovery import DiscoveryError
from horovod_accel.runner.elastic.host_manager import HostManager

TERM_GRACE_S = 3.0
OUTPUT_DRAIN_S = 3.0
_TICK_S = 0.05
# Upstream's name (its tests patch it): how often hosts are discovered.
DISCOVER_HOSTS_FREQUENCY_SECS = 1.0
# Upstream's words for a job ended by failed workers, kept so that tooling
# which matches them keeps working.
WORKERS_FAILED = ("Horovod detected that one or more processes exited with non-zero status, "
                  "thus causing the job to be terminated")


class JobFailed(Exception):
    """The elastic job cannot go on; the message names the cause."""


@dataclasses.dataclass(kw_only=True)
class ElasticSpec(rank_process.LaunchSettings):
    num_proc: int                # workers the first round waits for
    min_np: int
    max_np: object               # int or None (no limit)
    discovery: object            # discovery.FixedHosts or HostDiscoveryScript
    store: object                # the running RendezvousStoreServer (its port is store_port)
    store_addr: object           # hostname -> store address seen from that host
    is_local: object             # hostname -> bool (start without ssh)
    elastic_timeout: float = 600.0
    reset_limit: object = None
    cooldown_range: object = None
    ready_timeout: float = 60.0


class _Worker:
    def __init__(self, wid, hostname):
        self.id = wid
        self.hostname = hostname
        self.proc = None            # RankProcess once started
        self.exited = False
        self.removed = False        # dropped by the driver: its exit is expected
        self.hung = False           # stopped by the driver as hung

    def describe(self):
        return f"worker {self.id} (host {self.hostname})"


class ElasticDriver:
    def __init__(self, spec):
        self.spec = spec
        self.hosts = HostManager(spec.cooldown_range)
        self.events = queue.Queue()
        self.workers = {}           # id -> _Worker, every worker ever started
        self.members = []           # worker ids of the current round, in rank order
        self.round = 0
        self.plan = None
        self.forming = True         # the next round is to be formed
        self.waiting_since = time.monotonic()
        self.reset_since = None
        self.resets = 0
        self.hosts_seq = 0
        self.last_add_seq = 0
        self.succeeded = None       # the first worker that exited 0
        self.failures = []          # failed workers, in order
        self.signum = None
        self.error = None           # why the job failed (JobFailed's message), once run() ends
        self._next_id = 0
        self._stop = threading.Event()
        self._last_discovery_error = None
        self._last_available = []

    # ---------------------------------------------------------------- events

    def _discovery_loop(self):
        while not self._stop.wait(DISCOVER_HOSTS_FREQUENCY_SECS):
            try:
                self.events.put(("hosts", self.spec.discovery.find_available_hosts()))
            except DiscoveryError as e:
                self.events.put(("discovery_error", e))

    def _on_signal(self, signum, frame):
        if self.signum is not None:
            for w in self.workers.values():  # a second signal kills at once
                if w.proc is not None:
                    w.proc.signal_group(signal.SIGKILL)
        self.signum = signum

    def _handle(self, kind, payload):
        if kind == "exit":
            self._on_exit(payload)
        elif kind == "hosts":
            self._last_discovery_error = None
            self._on_hosts(payload)
        elif kind == "discovery_error":
            msg = str(payload)
            if msg != self._last_discovery_error:  # later failures are retried
                output.console_message(f"warning: {msg}; keeping the last host list and retrying")
            self._last_discovery_error = msg

    def _on_exit(self, w):
        w.exited = True
        how = w.proc.describe_exit()
        if w.removed:
            self._log(f"{w.describe()} left the job ({how})")
            return
        if w.proc.proc.returncode == 0:
            if self.succeeded is None:
                self._log(f"{w.describe()} finished; the job ends when its round's workers have")
            self.succeeded = self.succeeded or w
            return
        self.failures.append(w)
        if self.succeeded is not None:
            output.console_message(f"{w.describe()} failed with {how} after training finished")
            return
        cooldown = self.hosts.blacklist(w.hostname)
        until = "for the rest of the job" if cooldown is None else f"for {cooldown:.0f} s"
        output.console_message(f"{w.describe()} failed with {how}; host {w.hostname} is "
                               f"blacklisted {until}; the other workers reset")
        self._print_tail(w)
        if w.id in self.members and self.reset_since is None:
            self.reset_since = time.monotonic()

    def _on_hosts(self, discovered):
        # Compared with the last list seen, not the last discovery: a cooldown
        # that ends changes the available hosts without any new discovery.
        self.hosts.update(discovered)
        available = self.hosts.available()
        if available == self._last_available:
            return
        self._last_available = available
        self._log("hosts now: " + (hosts_mod.format_hosts(available) or "(none)"))
        if self.forming or self.succeeded is not None:
            return  # the round being formed reads the hosts itself
        live = [(wid, self.workers[wid].hostname) for wid in self.members
                if not self.workers[wid].exited]
        plan = plan_round(available, live, self.spec.max_np)
        if same_plan(plan, self.plan):
            return
        self.hosts_seq += 1
        if plan.new_count() > 0:
            self.last_add_seq = self.hosts_seq
        self.spec.store.set_local(proto.HOSTS_EVENT_KEY,
                                  proto.format_hosts_event(self.hosts_seq, self.last_add_seq))
        self._log(f"host update #{self.hosts_seq}: workers reset at their next commit")

    # ---------------------------------------------------------------- rounds

    def _live_members(self):
        return [self.workers[wid] for wid in self.members if not self.workers[wid].exited]

    def _check_reset(self):
        """While a round runs: starts forming the next one once every live
        worker is ready; stops workers that hang."""
        live = self._live_members()
        if not live:
            if self.succeeded is None and self.members:
                raise JobFailed(f"{WORKERS_FAILED}: every worker of round {self.round} failed; "
                                f"the last failure: {self._last_failure()}")
            return
        ready = [w for w in live
                 if self.spec.store.get_local(proto.ready_key(self.round, w.id)) is not None]
        if ready and self.reset_since is None:
            self.reset_since = time.monotonic()
        if self.reset_since is None:
            return
        if len(ready) == len(live):
            self.forming, self.waiting_since = True, time.monotonic()
            return
        if time.monotonic() - self.reset_since > self.spec.ready_timeout:
            for w in live:
                if w not in ready and not w.hung:
                    w.hung = True
                    output.console_message(
                        f"{w.describe()} did not reset within {self.spec.ready_timeout:.0f} s of "
                        "its peers; stopping it as hung")
                    w.proc.signal_group(signal.SIGKILL)

    def _release_waiting(self):
        """Training is over: the workers waiting for a next round leave."""
        for w in self._live_members():
            if not w.removed and self.spec.store.get_local(
                    proto.ready_key(self.round, w.id)) is not None:
                w.removed = True
                self.spec.store.set_local(proto.assignment_key(self.round + 1, w.id), proto.REMOVED)

    def _form_round(self):
        """Forms the next round if enough slots are available; else waits
        (up to --elastic-timeout) for discovery to find more."""
        s = self.spec
        survivors = [(w.id, w.hostname) for w in self._live_members()]
        plan = plan_round(self.hosts.available(), survivors, s.max_np)
        need = s.num_proc if self.round == 0 else s.min_np
        if plan.size < need:
            if self.hosts.all_blacklisted():
                raise JobFailed(f"{WORKERS_FAILED}: every host is blacklisted after failures ("
                                + ", ".join(self.hosts.blacklisted_names()) + "); last failure: "
                                + self._last_failure())
            waited = time.monotonic() - self.waiting_since
            if waited > s.elastic_timeout:
                flag = "-np" if self.round == 0 else "--min-np"
                cause = f"{WORKERS_FAILED}: " if self.failures else ""
                raise JobFailed(f"{cause}only {plan.size} slots are available ("
                                f"{s.discovery.describe()}), fewer than {flag} {need}, for "
                                f"{s.elastic_timeout:.0f} s (--elastic-timeout / "
                                "HOROVOD_ELASTIC_TIMEOUT)")
            return
        if self.round > 0:
            if not plan.survivors():
                raise JobFailed("no worker of the previous round is left on the available hosts, "
                                "so no one holds the training state to sync from; last failure: "
                                + self._last_failure())
            self.resets += 1
            if s.reset_limit is not None and self.resets > s.reset_limit:
                raise JobFailed(RESET_LIMIT_EXCEEDED_MESSAGE.format(s.reset_limit) +
                                f" (--reset-limit; it would reset a "
                                f"{self._ordinal(self.resets)} time); last failure: "
                                + self._last_failure())
        r = self.round + 1
        for wid in plan.removed:
            self.workers[wid].removed = True
            s.store.set_local(proto.assignment_key(r, wid), proto.REMOVED)
        members, spawn = [], []
        for (host, wid), topo in zip(plan.placement, plan.topology()):
            if wid is None:
                w = self._new_worker(host)
                spawn.append((w, topo))
                wid = w.id
            members.append(wid)
            s.store.set_local(proto.assignment_key(r, wid),
                              proto.format_assignment(topo, self.hosts_seq))
        # The plan as it runs, new workers named, so that a later discovery
        # result is compared with the workers that hold the slots.
        plan = RoundPlan(placement=[(h, wid) for (h, _), wid in zip(plan.placement, members)])
        self.round, self.members, self.plan = r, members, plan
        self.forming, self.reset_since = False, None
        self._log(f"round {r}: {plan.size} workers on "
                  f"{', '.join(dict.fromkeys(h for h, _ in plan.placement))}"
                  f" ({len(spawn)} new, {len(plan.removed)} removed)")
        for w, topo in spawn:
            self._start(w, topo, r)

    # ---------------------------------------------------------------- processes

    def _new_worker(self, host):
        self._next_id += 1
        w = _Worker(f"w{self._next_id}", host)
        self.workers[w.id] = w
        return w

    def _start(self, w, topo, round_):
        s = self.spec
        extra = {"HOROVOD_ELASTIC": "1", proto.WORKER_ID_ENV: w.id,
                 proto.SPAWN_ROUND_ENV: str(round_),
                 proto.ASSIGNMENT_TIMEOUT_ENV: str(s.elastic_timeout + s.ready_timeout + 60)}
        launch = s.launcher or rank_process.launch_rank
        try:
            w.proc = launch(
                s, hosts_mod.SlotInfo(hostname=w.hostname, **topo), s.store_addr(w.hostname),
                not s.is_local(w.hostname), lambda rp: self.events.put(("exit", w)), extra,
                label=f"{w.id} (rank {topo['rank']} of round {round_})")
        except rank_process.LaunchError as e:
            raise JobFailed(f"could not start {w.describe()}: {e}") from None

    def _stop_all(self):
        live = [w for w in self.workers.values() if w.proc is not None and not w.exited]
        for w in live:
            w.proc.signal_group(signal.SIGTERM)
        deadline = time.monotonic() + TERM_GRACE_S
        for w in live:
            try:
                w.proc.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        rank_process.kill_and_drain([w.proc for w in self.workers.values() if w.proc is not None],
                                    OUTPUT_DRAIN_S)

    # ---------------------------------------------------------------- reporting

    def _log(self, msg):
        if self.spec.verbose:
            output.console_message(msg)

    @staticmethod
    def _ordinal(n):
        return {1: "1st", 2: "2nd", 3: "3rd"}.get(n, f"{n}th")

    def _last_failure(self):
        if not self.failures:
            return "none"
        w = self.failures[-1]
        return f"{w.describe()} failed with {w.proc.describe_exit()}"

    @staticmethod
    def _print_tail(w):
        tail = list(w.proc.err.tail)
        if tail:
            output.console_message(f"last {len(tail)} stderr lines of {w.id}:\n" +
                                   "\n".join(f"    {t}" for t in tail))

    # ---------------------------------------------------------------- main loop

    def final_size(self):
        """The number of ranks of the last round (0 before the first)."""
        return self.plan.size if self.plan is not None else 0

    def _finished(self):
        """The job's exit code once it is over, else None."""
        if self.succeeded is None:
            return None
        if any(not self.workers[wid].exited for wid in self.members):
            return None
        bad = [self.workers[wid] for wid in self.members
               if not self.workers[wid].removed and self.workers[wid].proc.proc.returncode != 0]
        if bad:
            self.error = ("training finished on some workers but failed on others: " +
                          ", ".join(f"{w.describe()}: {w.proc.describe_exit()}" for w in bad))
            output.console_message(self.error)
            return 1
        return 0

    def run(self):
        """Runs the job; blocks; returns horovodrun's exit code."""
        s = self.spec
        old = {}
        if threading.current_thread() is threading.main_thread():
            old = {sig: signal.signal(sig, self._on_signal)
                   for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        try:
            try:
                first = s.discovery.find_available_hosts()
            except DiscoveryError as e:
                self.error = f"elastic job cannot start: {e}"
                output.console_message(self.error)
                return 1
            self.hosts.update(first)
            self._last_available = self.hosts.available()
            s.store.set_local(proto.HOSTS_EVENT_KEY, proto.format_hosts_event(0, 0))
            threading.Thread(target=self._discovery_loop, name="hvda-discovery",
                             daemon=True).start()
            return self._loop()
        except JobFailed as e:
            self.error = str(e)
            output.console_message(f"elastic job failed: {e}")
            return 1
        finally:
            self._stop.set()
            self._stop_all()
            for sig, handler in old.items():
                signal.signal(sig, handler)

    def _loop(self):
        while True:
            try:
                kind, payload = self.events.get(timeout=_TICK_S)
                self._handle(kind, payload)
                while True:
                    kind, payload = self.events.get_nowait()
                    self._handle(kind, payload)
            except queue.Empty:
                pass
            if self.signum is not None:
                output.console_message(f"received {signal.Signals(self.signum).name}; stopping "
                                       "all workers")
                return 128 + self.signum
            code = self._finished()
            if code is not None:
                return code
            if self.succeeded is not None:
                self._release_waiting()
            elif self.forming:
                self._form_round()
            else:
                self._check_reset()

