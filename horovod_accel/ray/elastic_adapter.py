"""RayExecutor's elastic mode (min_workers): horovodrun's elastic driver
(runner/elastic/driver.py) runs the job, with Ray nodes as its hosts
(discovery.py) and actors as its workers (actor_rank.py).

Each run()/execute() is one elastic job, from its own store and driver:
between min_workers and max_workers workers train; a worker that fails (its
call raised, or its actor died) blacklists its node (for cooldown_range, or
for the job), the survivors reset (hvd.elastic.run) and the driver forms the
next round, with new actors on the nodes that have free slots; nodes that
join add workers at the next commit. The call blocks until training ended
and returns the values of the last round's ranks, in rank order.

Ownership: the store, the driver and every actor live only during a call;
start() merely records the settings. The driver runs in the calling thread
(signal handling, when that is the main thread, as horovodrun's).
"""
import secrets
import signal

import ray

from horovod_accel.common import settings
from horovod_accel.ray.actor_rank import ActorLauncher
from horovod_accel.ray.callbacks import CallbackPump
from horovod_accel.ray.discovery import MappingDiscovery, RayHostDiscovery
from horovod_accel.ray.utils import nics_to_env_var
from horovod_accel.ray.worker import RunCall
from horovod_accel.rendezvous.server import RendezvousStoreServer
from horovod_accel.runner.elastic.driver import ElasticDriver, ElasticSpec

_LOOPBACK = "127.0.0.1"


class ElasticAdapter:
    def __init__(self, settings, params):
        self.settings = settings
        self.params = params            # params.ElasticParams
        self.discovery = None
        self._executable = None
        self._extra_env = {}
        self.driver = None              # the last call's ElasticDriver

    def start(self, executable_cls=None, executable_args=None, executable_kwargs=None,
              extra_env_vars=None):
        """Records what every worker creates and gets; starts nothing (each
        call starts its own workers). ValueError if override_discovery=False
        and settings.discovery is not set."""
        r = self.params.resources
        if self.params.override_discovery:
            self.discovery = RayHostDiscovery(r.use_gpu, r.cpus_per_worker,
                                              r.gpus_per_worker or 1)
        else:
            found = getattr(self.settings, "discovery", None)
            if found is None:
                raise ValueError("RayExecutor: override_discovery=False needs settings.discovery "
                                 "(an object with find_available_hosts_and_slots())")
            self.discovery = found if hasattr(found, "find_available_hosts") else \
                MappingDiscovery(found)
        if executable_cls is not None:
            self._executable = (executable_cls, list(executable_args or ()),
                                dict(executable_kwargs or {}))
        self._extra_env = dict(extra_env_vars or {})

    # ---------------------------------------------------------------- calls

    def run(self, fn, args=None, kwargs=None, callbacks=None):
        """fn(*args, **kwargs) on every worker of an elastic job; blocks."""
        return self._run(RunCall(fn, args, kwargs), callbacks)

    def execute(self, fn, callbacks=None):
        """fn(executable) on every worker of an elastic job; blocks."""
        return self._run(fn, callbacks)

    def run_remote(self, fn, args=None, kwargs=None):
        raise NotImplementedError("RayExecutor.run_remote is not available in elastic mode "
                                  "(min_workers): its workers come and go, so there are no "
                                  "fixed ObjectRefs to return; use run()")

    def execute_single(self, fn):
        raise NotImplementedError("RayExecutor.execute_single is not available in elastic mode "
                                  "(min_workers): there is no fixed rank-0 worker; use "
                                  "execute()")

    def _store_addr(self, here):
        ips = getattr(self.discovery, "node_ips", {})

        def store_addr(host):
            return _LOOPBACK if ips.get(host, host) == here else here
        return store_addr

    def _env(self):
        env = {"PYTHONUNBUFFERED": "1", "HOROVOD_START_TIMEOUT": str(self.settings.timeout_s)}
        if self.settings.nics:
            env.update(nics_to_env_var(self.settings.nics))
        env.update(self._extra_env)
        return env

    def _run(self, call, callbacks):
        if self.discovery is None:
            raise RuntimeError("RayExecutor: call start() before running functions")
        p, s = self.params, self.settings
        secret = secrets.token_hex(32)
        gloo_timeout = settings.read("HOROVOD_GLOO_TIMEOUT_SECONDS", self._extra_env)
        verbose = (s.verbose or 0) >= 2
        with RendezvousStoreServer(secret, host="0.0.0.0", verbose=verbose) as store, \
                CallbackPump(callbacks, []) as pump:
            launcher = ActorLauncher(call, self._executable, p.resources, pump,
                                     use_node_iface=not s.nics)
            spec = ElasticSpec(
                num_proc=p.min_workers, min_np=p.min_workers, max_np=p.max_workers,
                discovery=self.discovery, command=["<ray actor>"], env=self._env(),
                secret=secret, store=store, store_port=store.port,
                store_addr=self._store_addr(ray.util.get_node_ip_address()),
                is_local=lambda host: False, elastic_timeout=p.elastic_timeout,
                reset_limit=p.reset_limit, cooldown_range=p.cooldown_range,
                ready_timeout=max(60.0, 2 * gloo_timeout), verbose=verbose,
                start_timeout=float(s.timeout_s), launcher=launcher.launch)
            self.driver = ElasticDriver(spec)
            code = self.driver.run()
        return self._results(self.driver, code)

    @staticmethod
    def _results(driver, code):
        if driver.signum is not None:
            if driver.signum == signal.SIGINT:
                raise KeyboardInterrupt
            raise RuntimeError(f"horovod.ray: the elastic job was stopped by "
                               f"{signal.Signals(driver.signum).name}")
        if code != 0:
            failed = [w.proc for w in driver.failures if getattr(w.proc, "failure", None)]
            cause = failed[-1].failure.error if failed else None
            raise RuntimeError(f"horovod.ray: {driver.error or f'the elastic job failed ({code})'}"
                               ) from cause
        values = []
        for wid in driver.members:
            handle = driver.workers[wid].proc
            if handle.outcome is not None and handle.outcome[0] == "returned":
                values.append((handle.outcome[1], handle.outcome[2]))
        return [v for _, v in sorted(values, key=lambda rv: rv[0])]

    def shutdown(self):
        """Nothing outlives a call; forgets the settings. Idempotent."""
        self.discovery = None
        self.driver = None
