"""One elastic worker as a Ray actor, shown to horovodrun's elastic driver
(runner/elastic/driver.py) as if it were a rank's process: the driver
starts, watches and stops workers through the launcher hook
(rank_process.LaunchSettings.launcher), and ActorLauncher.launch is that
hook for Ray; ActorRank has RankProcess's interface.

An actor runs one call, BaseHorovodWorker.execute_elastic: the user's
function, whose hvd.init() joins the round the driver assigned (NOTE
[Elastic rounds] in common/elastic_protocol.py). Its "exit code": 0 when the
function returned (or the driver removed the worker), 1 when it raised,
-SIGKILL when the actor died (ray.kill, a lost node, out of memory). The
actor is killed once the call ended, freeing its slot; stopping a worker
(signal_group) kills it too: an actor has no gentler stop.

Threading: launch() runs on the driver's loop thread and returns at once;
one daemon thread per actor waits for its call and reports the exit.
"""
import collections
import signal
import subprocess
import sys
import threading

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from horovod_accel.ray.results import Failure
from horovod_accel.ray.worker import BaseHorovodWorker
from horovod_accel.runner import rank_process

_TAIL_LINES = 12


class _ActorExit:
    """The Popen-like part the driver reads: returncode, wait()."""

    pid = None

    def __init__(self):
        self.returncode = None
        self._ended = threading.Event()

    def wait(self, timeout=None):
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired("ray actor", timeout)
        return self.returncode

    def end(self, code):
        self.returncode = code
        self._ended.set()


class _Tail:
    """Stands in for the output forwarders (out and err): what the driver
    prints of a failed worker (its remote traceback), and a join() that has
    nothing to wait for (Ray forwards actor output to the driver itself)."""

    def __init__(self):
        self.tail = collections.deque(maxlen=_TAIL_LINES)

    def join(self, timeout=None):
        return None


class ActorRank(rank_process.RankProcess):
    """A started elastic worker (the driver's RankProcess for an actor)."""

    def __init__(self, slot, actor, label):
        tail = _Tail()
        super().__init__(slot, _ActorExit(), True, tail, tail)
        self.actor = actor
        self.label = label
        self.outcome = None     # ("returned", final rank, value) | ("exited", code, None)
        self.failure = None     # results.Failure when the call raised or the actor died
        self._lock = threading.Lock()
        self._killed = False

    def _kill(self):
        with self._lock:
            if self._killed:
                return
            self._killed = True
        ray.kill(self.actor, no_restart=True)

    def signal_group(self, sig):
        """Any stop request ends the actor (ray.kill). Safe after it ended."""
        if self.proc.returncode is None:
            self.stopped_by_us = True
        self._kill()

    def describe_exit(self):
        if self.proc.returncode is None:
            return "still running"
        if self.failure is not None:
            if self.failure.cause is not None:
                return f"{type(self.failure.cause).__name__}: {self.failure.cause}"
            reason = self.failure.death_reason()
            return "actor death" + (f" ({reason})" if reason else "")
        return f"exit code {self.proc.returncode}"

    def watch(self, ref, on_exit):
        """Blocks until the actor's call ended; records how; kills the actor;
        calls on_exit(self). Runs on the actor's wait thread."""
        try:
            self.outcome = ray.get(ref)
            kind, value, _ = self.outcome
            code = 0 if kind == "returned" else value
        except ray.exceptions.RayError as e:
            self.failure = Failure(self.rank, self.label, e)
            self.err.tail.extend(self.failure.traceback_lines())
            code = -int(signal.SIGKILL) if self.failure.actor_died else 1
        self._kill()
        self.proc.end(code)
        on_exit(self)


def scheduling_for(host):
    """Actor options that put it on `host`: a Ray node id (pinned with node
    affinity, never elsewhere) or a node address (Ray's node:<address>
    resource)."""
    alive = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
    if host in alive:
        return {"scheduling_strategy": NodeAffinitySchedulingStrategy(node_id=host, soft=False)}
    return {"resources": {f"node:{host}": 0.001}}


class ActorLauncher:
    """The launcher hook for Ray: starts a worker actor per call.

    call: what each worker runs (a callable taking the executable);
    executable: (cls, args, kwargs) each worker creates first, or None;
    resources: params.Resources; pump: the callbacks.CallbackPump of the run.
    """

    def __init__(self, call, executable, resources, pump, use_node_iface):
        self.call = call
        self.executable = executable
        self.resources = resources
        self.pump = pump
        self.use_node_iface = use_node_iface

    def launch(self, settings, slot, store_addr, remote, on_exit, extra_env=None, label=None):
        """rank_process.launch_rank's signature and contract, over an actor:
        returns at once with the ActorRank; on_exit(it) once its call ended."""
        env = dict(settings.env)
        env.update(rank_process.slot_env(slot, store_addr, settings.store_port, settings.secret))
        env.update(extra_env or {})
        options = dict(self.resources.actor_options())
        options.update(scheduling_for(slot.hostname))
        actor = ray.remote(BaseHorovodWorker).options(**options).remote(
            world_rank=slot.rank, world_size=slot.size)
        # Ray runs one caller's calls on an actor in the order submitted: the
        # environment is set before the worker's code runs.
        actor.update_env_vars.remote(env)
        self.pump.add_worker(actor)
        ref = actor.execute_elastic.remote(self.call, self.executable, self.use_node_iface)
        label = label or f"rank {slot.rank}"
        handle = ActorRank(slot, actor, f"{label} (node {slot.hostname})")
        if settings.verbose:  # console output asked for, as horovodrun's; not logging
            print(f"horovod.ray: started {label} as an actor on node {slot.hostname}",
                  file=sys.stderr, flush=True)
        threading.Thread(target=handle.watch, args=(ref, on_exit),
                         name=f"hvda-ray-wait-{slot.rank}", daemon=True).start()
        return handle
