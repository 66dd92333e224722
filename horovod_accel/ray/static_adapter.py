"""A RayExecutor job with a fixed set of workers: one actor per rank, placed
by a placement group (strategy.py), alive from start() to shutdown().

start() blocks until every actor runs, then numbers the ranks by where Ray
placed them: node by node (in the order of the first actor on each node), so
ranks are contiguous per node as horovodrun makes them; starts the store
(coordinator.py) and sets every actor's HOROVOD_* environment before any
user code runs there. run()/execute() block until every rank returned, or
raise RankError as soon as one failed (results.py); run_remote() returns
the ObjectRefs without waiting.

NOTE [A failed call ends the job]
When a rank's call fails, its Horovod job is over, as when a horovodrun rank
exits: the failed rank shut Horovod down, and its peers' init() calls are
no longer in step (the failed rank's next call starts a new generation at
its hvd.init(), while a peer's next call first fails on the ended one: NOTE
[Told of the end]; the peer would join one call late, for good). So the job
is re-formed before the next call: every
actor is replaced by a new one in the same placement-group bundle (same
node, same rank order), with a new store and secret, and the executable is
created anew. Calls that succeed never re-form anything; run_remote's
failures are noticed at the next call.

Ownership: the adapter owns its actors, the strategy's placement group and
the coordinator's store; shutdown() ends all three.
"""
import sys

import ray

from horovod_accel.common import log
from horovod_accel.ray import results, strategy
from horovod_accel.ray.callbacks import CallbackPump
from horovod_accel.ray.coordinator import Coordinator
from horovod_accel.ray.utils import nics_to_env_var
from horovod_accel.ray.worker import RunCall

# How long shutdown() lets the ranks end their Horovod job before killing them.
SHUTDOWN_GRACE_S = 5.0


def rank_order(places):
    """Indices of the actors in rank order: grouped by node (nodes in the
    order of their first actor), creation order within a node."""
    by_node = {}
    for i, p in enumerate(places):
        by_node.setdefault(p["node_id"], []).append(i)
    return [i for ids in by_node.values() for i in ids]


class StaticAdapter:
    def __init__(self, settings, params):
        self.settings = settings
        self.params = params            # params.StaticParams
        self.workers = []               # actor handles, in rank order
        self.strategy = None
        self.coordinator = None
        self._where = []                # "rank i (node ip)" for messages
        self._start_args = None         # start()'s arguments, for re-forming the job
        self._failed = False            # a call failed: re-form before the next one
        self._remote_refs = []          # run_remote's last refs, checked at the next call
        self.formations = 0             # how many times the job was formed (1 + re-forms)

    # ---------------------------------------------------------------- start

    def start(self, executable_cls=None, executable_args=None, executable_kwargs=None,
              extra_env_vars=None):
        """Blocks until every worker runs with its rank's environment and
        executable. Raises TimeoutError if Ray cannot reserve the resources
        in time, RankError if an executable's constructor raised."""
        if self.workers:
            raise RuntimeError("RayExecutor.start() was already called; call shutdown() first")
        self._start_args = (executable_cls, executable_args, executable_kwargs,
                            dict(extra_env_vars or {}))
        self.strategy = strategy.for_params(self.params, self.settings)
        try:
            self._form()
        except BaseException:
            self.shutdown()
            raise

    def _form(self):
        """Starts one actor per rank (in the strategy's reserved bundles), the
        store, and every rank's environment and executable. Blocks."""
        executable_cls, executable_args, executable_kwargs, extra_env = self._start_args
        self.workers = self.strategy.create_workers()   # owned (killed on failure) from here
        places = ray.get([a.placement.remote() for a in self.workers])
        order = rank_order(places)
        self.workers = [self.workers[i] for i in order]
        places = [places[i] for i in order]
        self._where = [f"rank {r} (node {p['node_ip']})" for r, p in enumerate(places)]

        self.coordinator = Coordinator(self.settings)
        for rank, p in enumerate(places):
            self.coordinator.register(p["hostname"], p["node_id"], rank, node_ip=p["node_ip"])
        self.coordinator.finalize_registration()
        self.coordinator.establish_rendezvous()
        envs = [self.coordinator.rank_env(r) for r in range(len(places))]
        for env, net in zip(envs, self._network_env(places)):
            env.update(net)
        if self.params.resources.use_gpu:
            for env, cuda in zip(envs, self._visible_devices(places)):
                env.update(cuda)
        for env in envs:
            env.setdefault("PYTHONUNBUFFERED", "1")
            env.update(extra_env)
        ray.get([w.update_env_vars.remote(env) for w, env in zip(self.workers, envs)])
        self.formations += 1
        self._failed = False
        self._gather([w.start_executable.remote(executable_cls, executable_args,
                                                executable_kwargs) for w in self.workers])
        if (self.settings.verbose or 0) >= 2:
            nodes = len(self.coordinator.node_id_by_rank)
            ips = ", ".join(dict.fromkeys(p["node_ip"] for p in places))
            store = f"{envs[0]['HOROVOD_GLOO_RENDEZVOUS_ADDR']}:" \
                    f"{envs[0]['HOROVOD_GLOO_RENDEZVOUS_PORT']}"
            # The launcher's console output that verbose=2 asks for (as horovodrun's
            # own "started rank ..." lines), not a library diagnostic: it stays a print.
            print(f"horovod.ray: {len(self.workers)} workers on {nodes} node(s) ({ips}); store "
                  f"at {store}", file=sys.stderr, flush=True)

    def _end_workers(self):
        """Kills the actors and stops the store (the placement group stays)."""
        for w in self.workers:
            ray.kill(w, no_restart=True)
        self.workers = []
        self._remote_refs = []
        if self.coordinator is not None:
            self.coordinator.close()
            self.coordinator = None

    def _ready_for_call(self):
        """Re-forms the job if the last call failed (NOTE [A failed call ends
        the job]); blocks while it does."""
        if self._start_args is None or self.strategy is None:
            raise RuntimeError("RayExecutor: call start() before running functions")
        done, _ = ray.wait(self._remote_refs, num_returns=len(self._remote_refs), timeout=0) \
            if self._remote_refs else ([], [])
        for ref in done:
            try:
                ray.get(ref)
            except ray.exceptions.RayError:
                self._failed = True
        self._remote_refs = []
        if self._failed or not self.workers:
            if (self.settings.verbose or 0) >= 1:
                log.get_logger(__name__).warning(
                    "horovod.ray: the last call failed; restarting the workers before this one")
            self._end_workers()
            self._form()

    def _gather(self, refs):
        try:
            return results.gather(refs, self._where)
        except results.RankError:
            self._failed = True
            raise

    def _network_env(self, places):
        """Per rank: the interface(s) Gloo uses. settings.nics if given; else,
        when the ranks are on several machines, each rank's node interface
        (names may differ between machines); else none (the core chooses)."""
        if self.settings.nics:
            return [nics_to_env_var(self.settings.nics)] * len(places)
        if len({p["node_ip"] for p in places}) > 1:
            return [{"HOROVOD_GLOO_IFACE": p["iface"]} if p["iface"] else {} for p in places]
        return [{}] * len(places)

    def _visible_devices(self, places):
        """Per rank: CUDA_VISIBLE_DEVICES = every GPU of its node's workers, in
        local-rank order, so device `hvd.local_rank()` is the rank's own and
        the node's GPUs see each other (peer access)."""
        gpu_ids = ray.get([w.get_gpu_ids.remote() for w in self.workers])
        per_node = {}
        for p, ids in zip(places, gpu_ids):
            per_node.setdefault(p["node_id"], []).extend(str(i) for i in ids)
        return [{"CUDA_VISIBLE_DEVICES": ",".join(per_node[p["node_id"]])} for p in places]

    # ---------------------------------------------------------------- calls

    def _call_all(self, call, callbacks):
        """call(executable) on every rank, with the callbacks' queue set on
        the workers before the call starts; blocks; values in rank order."""
        self._ready_for_call()
        with CallbackPump(callbacks, self.workers):
            return self._gather([w.execute.remote(call) for w in self.workers])

    def run(self, fn, args=None, kwargs=None, callbacks=None):
        """fn(*args, **kwargs) on every rank; blocks; values in rank order."""
        return self._call_all(RunCall(fn, args, kwargs), callbacks)

    def execute(self, fn, callbacks=None):
        """fn(executable) on every rank; blocks; values in rank order."""
        return self._call_all(fn, callbacks)

    def run_remote(self, fn, args=None, kwargs=None):
        """fn(*args, **kwargs) on every rank; returns the ObjectRefs in rank
        order at once (ray.get them; a failure raises Ray's own error)."""
        self._ready_for_call()
        call = RunCall(fn, args, kwargs)
        self._remote_refs = [w.execute.remote(call) for w in self.workers]
        return list(self._remote_refs)

    def execute_single(self, fn):
        """fn(executable) on rank 0 only; blocks; its value."""
        self._ready_for_call()
        return results.gather([self.workers[0].execute.remote(fn)], self._where[:1])[0]

    # ---------------------------------------------------------------- end

    def shutdown(self):
        """Ends Horovod on every rank (waiting up to SHUTDOWN_GRACE_S for ranks
        still busy with a call), kills the actors, removes the placement group
        (if created here), stops the store. Idempotent."""
        if self.workers and not self._failed:
            ray.wait([w.shutdown_horovod.remote() for w in self.workers],
                     num_returns=len(self.workers), timeout=SHUTDOWN_GRACE_S)
        self._end_workers()
        if self.strategy is not None:
            self.strategy.shutdown()
            self.strategy = None
        self._start_args = None
