"""RayExecutor: upstream horovod.ray's executor (0.28.1 API). It checks its
arguments, then hands the work to an adapter: StaticAdapter (num_workers or
num_hosts; static_adapter.py) or ElasticAdapter (min_workers;
elastic_adapter.py). Upstream's module horovod.ray.runner is this one (the
`horovod` alias package maps the name): Coordinator and MiniSettings are
importable from here, as upstream's exports them (Ray Train imports them).

The process that creates a RayExecutor is the job's driver: it serves the
rendezvous store the ranks connect to, so it must run where the Ray nodes
can reach it (a node of the cluster, e.g. through `ray job submit`); Ray
Client (ray://) drivers are refused with a message saying so.
"""
import ray

from horovod_accel.ray import params as params_mod
from horovod_accel.ray import settings as settings_mod
from horovod_accel.ray.coordinator import Coordinator
from horovod_accel.ray.elastic_adapter import ElasticAdapter
from horovod_accel.ray.settings import MiniSettings
from horovod_accel.ray.static_adapter import StaticAdapter

__all__ = ["RayExecutor", "Coordinator", "MiniSettings"]


def _refuse_ray_client():
    if ray.util.client.ray.is_connected():
        raise RuntimeError(
            "horovod.ray: this process is a Ray Client (ray://...) driver, which the workers "
            "cannot reach to rendezvous; run the driver on a node of the cluster instead "
            "(`ray job submit -- python train.py`, or ray.init(address='auto') on a node)")


class RayExecutor:
    """Runs a Horovod job on Ray actors; see docs/ray.md.

    settings: from RayExecutor.create_settings().
    num_workers: workers packed on any nodes (placement group PACK); or
    num_hosts x num_workers_per_host: that many on each of num_hosts nodes
        (STRICT_SPREAD);
    cpus_per_worker, use_gpu, gpus_per_worker: each worker's resources;
    use_current_placement_group: inside a placement group, pack into it;
    min_workers (elastic mode), max_workers, reset_limit, cooldown_range
        ((MIN, MAX) seconds a failed node stays out), elastic_timeout,
        override_discovery (False: use settings.discovery).
    Raises ValueError for a wrong combination, as upstream does.
    """

    @classmethod
    def create_settings(cls, timeout_s=30, ssh_identity_file=None, ssh_str=None,
                        placement_group_timeout_s=100, nics=None, verbose=1):
        """The job's settings (settings.MiniSettings): timeout_s for the ranks
        to join at hvd.init(); placement_group_timeout_s for Ray to reserve
        the workers; nics, the interfaces the ranks use."""
        return settings_mod.create_settings(timeout_s, ssh_identity_file, ssh_str,
                                            placement_group_timeout_s, nics, verbose)

    def __init__(self, settings, num_workers=None, num_hosts=None, num_workers_per_host=1,
                 cpus_per_worker=1, use_gpu=False, gpus_per_worker=None,
                 use_current_placement_group=True, min_workers=None, max_workers=None,
                 reset_limit=None, cooldown_range=None, elastic_timeout=600,
                 override_discovery=True):
        self.params = params_mod.check(
            num_workers=num_workers, num_hosts=num_hosts,
            num_workers_per_host=num_workers_per_host, cpus_per_worker=cpus_per_worker,
            use_gpu=use_gpu, gpus_per_worker=gpus_per_worker,
            use_current_placement_group=use_current_placement_group, min_workers=min_workers,
            max_workers=max_workers, reset_limit=reset_limit, cooldown_range=cooldown_range,
            elastic_timeout=elastic_timeout, override_discovery=override_discovery)
        self.settings = settings
        self.settings.elastic = self.params.elastic
        self.adapter = None

    def _adapter(self):
        if self.adapter is None:
            raise RuntimeError("RayExecutor: call start() first (or it was shut down)")
        return self.adapter

    def start(self, executable_cls=None, executable_args=None, executable_kwargs=None,
              extra_env_vars=None):
        """Starts the workers (blocks until they run; elastic mode starts them
        per call); starts Ray first, as Ray's API does, if nothing did. executable_cls(*executable_args, **executable_kwargs) is
        created in every worker once its rank's environment is set;
        extra_env_vars are set in every worker."""
        if not ray.is_initialized():
            ray.init()  # as Ray's own API calls do (auto-init): a local Ray, or RAY_ADDRESS
        _refuse_ray_client()
        if self.adapter is not None:
            raise RuntimeError("RayExecutor.start() was already called; call shutdown() first")
        adapter = (ElasticAdapter if self.params.elastic else StaticAdapter)(
            self.settings, self.params)
        adapter.start(executable_cls, executable_args, executable_kwargs, extra_env_vars)
        self.adapter = adapter

    def run(self, fn, args=None, kwargs=None, callbacks=None):
        """fn(*args, **kwargs) on every worker; blocks; the values in rank
        order. callbacks receive what the workers ray_logger.log(). A worker
        that fails raises RankError (static) or RuntimeError (elastic, once
        the job cannot go on) naming it."""
        return self._adapter().run(fn, args, kwargs, callbacks)

    def run_remote(self, fn, args=None, kwargs=None):
        """fn(*args, **kwargs) on every worker; the ObjectRefs, rank order."""
        return self._adapter().run_remote(fn, args, kwargs)

    def execute(self, fn, callbacks=None):
        """fn(executable) on every worker; blocks; the values in rank order."""
        return self._adapter().execute(fn, callbacks)

    def execute_single(self, fn):
        """fn(executable) on the rank 0 worker; blocks; its value."""
        return self._adapter().execute_single(fn)

    def shutdown(self):
        """Ends the workers and the store. Safe to call twice."""
        if self.adapter is not None:
            self.adapter.shutdown()
            self.adapter = None
