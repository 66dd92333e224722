"""Where a static job's worker actors go: Ray placement groups reserve their
resources before any actor starts (upstream's two strategies).

- PackStrategy (num_workers): one bundle per worker, strategy PACK: Ray fills
  few nodes first. Inside a placement group (a Ray Tune trial, say) with
  use_current_placement_group, the workers go into that group instead.
- SpreadStrategy (num_hosts x num_workers_per_host): one bundle per host with
  every worker of that host, strategy STRICT_SPREAD: each bundle on its own
  node, so every node gets the same number of workers.

Ownership: a strategy owns the placement group it created (shutdown()
removes it, which also ends the actors in it); a group it inherited is left
alone. The group is reserved once and outlives the actors: a re-formed job
(static_adapter.py) puts its new actors into the same bundles. Actors are
created, not awaited: their ranks are set once Ray says where they run.
"""
import ray
from ray.util.placement_group import (get_current_placement_group, placement_group,
                                      remove_placement_group)
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from horovod_accel.ray.worker import BaseHorovodWorker


def create_placement_group(bundles, strategy, timeout_s):
    """Creates a placement group and blocks until Ray reserved it; removes it
    and raises TimeoutError (upstream's type) if that takes over timeout_s."""
    pg = placement_group(bundles, strategy=strategy)
    ready, _ = ray.wait([pg.ready()], timeout=timeout_s)
    if not ready:
        remove_placement_group(pg)
        raise TimeoutError(
            f"Ray could not reserve the workers' resources within {timeout_s} s "
            f"(placement_group_timeout_s): {len(bundles)} bundle(s) of {bundles[0]} with "
            f"strategy {strategy}, while the cluster has {ray.available_resources()} free of "
            f"{ray.cluster_resources()}. Lower num_workers / cpus_per_worker, add nodes, or use "
            "an autoscaling cluster.")
    return pg


class _Strategy:
    def __init__(self, resources, timeout_s):
        self.resources = resources      # params.Resources
        self.timeout_s = timeout_s
        self.placement_group = None
        self._owns_group = False

    def _actor(self, bundle_index, rank, size):
        options = dict(self.resources.actor_options())
        options["scheduling_strategy"] = PlacementGroupSchedulingStrategy(
            placement_group=self.placement_group, placement_group_bundle_index=bundle_index,
            placement_group_capture_child_tasks=False)
        return ray.remote(BaseHorovodWorker).options(**options).remote(world_rank=rank,
                                                                       world_size=size)

    def shutdown(self):
        """Removes the placement group this strategy created. Idempotent."""
        if self._owns_group and self.placement_group is not None:
            remove_placement_group(self.placement_group)
        self.placement_group = None
        self._owns_group = False


class PackStrategy(_Strategy):
    def __init__(self, resources, timeout_s, num_workers, use_current_placement_group):
        super().__init__(resources, timeout_s)
        self.num_workers = num_workers
        self._inherit = use_current_placement_group
        self._index = None          # bundle index for every actor (-1: any), None: its own

    def create_workers(self):
        """Returns new actors, one per worker. The first call blocks until
        the resources are reserved; later calls (a re-formed job) reuse the
        reservation, so the new actors go where the old ones were."""
        if self.placement_group is None:
            current = get_current_placement_group() if self._inherit else None
            if current is not None:
                self.placement_group, self._index = current, -1  # any bundle of the caller's
            else:
                self.placement_group = create_placement_group(
                    [self.resources.bundle() for _ in range(self.num_workers)], "PACK",
                    self.timeout_s)
                self._owns_group = True
        return [self._actor(i if self._index is None else self._index, i, self.num_workers)
                for i in range(self.num_workers)]


class SpreadStrategy(_Strategy):
    def __init__(self, resources, timeout_s, num_hosts, num_workers_per_host):
        super().__init__(resources, timeout_s)
        self.num_hosts = num_hosts
        self.per_host = num_workers_per_host

    def create_workers(self):
        """Returns new actors, host by host; reserves the resources (blocking)
        on the first call only, as PackStrategy does."""
        if self.placement_group is None:
            self.placement_group = create_placement_group(
                [self.resources.bundle(self.per_host) for _ in range(self.num_hosts)],
                "STRICT_SPREAD", self.timeout_s)
            self._owns_group = True
        size = self.num_hosts * self.per_host
        return [self._actor(i // self.per_host, i, size) for i in range(size)]


def for_params(params, settings):
    """The strategy of a StaticParams (upstream's choice: inside a placement
    group with use_current_placement_group, always pack into it)."""
    timeout_s = settings.placement_group_timeout_s
    if params.num_workers is not None or (params.use_current_placement_group and
                                          get_current_placement_group() is not None):
        return PackStrategy(params.resources, timeout_s, params.world_size,
                            params.use_current_placement_group)
    return SpreadStrategy(params.resources, timeout_s, params.num_hosts,
                          params.num_workers_per_host)
