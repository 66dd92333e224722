"""ElasticRayExecutor: upstream's older elastic API (deprecated there since
0.25.0 in favour of RayExecutor(min_workers=...)), kept so scripts written
for it run; it is a thin layer over the same ElasticAdapter.

    settings = ElasticRayExecutor.create_settings(min_num_proc=1, max_num_proc=4)
    executor = ElasticRayExecutor(settings, cpus_per_slot=1)
    executor.start()
    executor.run(train_fn)         # train_fn() takes no arguments
"""
import dataclasses
import warnings

from horovod_accel.ray import params as params_mod
from horovod_accel.ray.discovery import RayHostDiscovery
from horovod_accel.ray.elastic_adapter import ElasticAdapter
from horovod_accel.ray.settings import MiniSettings, create_settings

__all__ = ["ElasticRayExecutor", "RayHostDiscovery"]


@dataclasses.dataclass
class ElasticRaySettings(MiniSettings):
    """MiniSettings plus upstream's ElasticSettings fields."""
    min_num_proc: int = 1
    max_num_proc: int = None
    reset_limit: int = None
    cooldown_range: tuple = None
    elastic_timeout: float = 600
    discovery: object = None    # set by ElasticRayExecutor unless override_discovery=False

    @property
    def num_proc(self):
        return self.min_num_proc


class ElasticRayExecutor:
    """Deprecated: use RayExecutor(settings, min_workers=..., max_workers=...)."""

    @staticmethod
    def create_settings(min_num_proc=1, max_num_proc=None, reset_limit=None,
                        elastic_timeout=600, timeout_s=30, ssh_identity_file=None, nics=None,
                        min_np=None, max_np=None, **kwargs):
        """Upstream's settings; min_np/max_np are its deprecated spellings.
        kwargs: verbose, cooldown_range, placement_group_timeout_s."""
        if min_np is not None:
            warnings.warn("min_np is deprecated, use min_num_proc instead", DeprecationWarning,
                          stacklevel=2)
            min_num_proc = min_np
        if max_np is not None:
            warnings.warn("max_np is deprecated, use max_num_proc instead", DeprecationWarning,
                          stacklevel=2)
            max_num_proc = max_np
        unknown = set(kwargs) - {"verbose", "cooldown_range", "placement_group_timeout_s"}
        if unknown:
            raise TypeError(f"ElasticRayExecutor.create_settings: unexpected arguments "
                            f"{sorted(unknown)}")
        base = create_settings(timeout_s=timeout_s, ssh_identity_file=ssh_identity_file,
                               nics=nics, verbose=kwargs.get("verbose", 1),
                               placement_group_timeout_s=kwargs.get("placement_group_timeout_s",
                                                                    100))
        fields = dict(dataclasses.asdict(base), elastic=True)
        return ElasticRaySettings(**fields, min_num_proc=min_num_proc,
                                  max_num_proc=max_num_proc, reset_limit=reset_limit,
                                  cooldown_range=kwargs.get("cooldown_range"),
                                  elastic_timeout=elastic_timeout)

    def __init__(self, settings, use_gpu=False, cpus_per_slot=1, gpus_per_slot=None,
                 env_vars=None, override_discovery=True):
        warnings.warn("ElasticRayExecutor is deprecated (as upstream, since 0.25.0); use "
                      "RayExecutor(settings, min_workers=..., max_workers=...)",
                      DeprecationWarning, stacklevel=2)
        self.settings = settings
        self.params = params_mod.check(
            min_workers=settings.min_num_proc, max_workers=settings.max_num_proc,
            reset_limit=settings.reset_limit, cooldown_range=settings.cooldown_range,
            elastic_timeout=settings.elastic_timeout, cpus_per_worker=cpus_per_slot,
            use_gpu=use_gpu, gpus_per_worker=gpus_per_slot,
            override_discovery=override_discovery)
        self.env_vars = dict(env_vars or {})
        self.adapter = None

    def start(self):
        """Records the job (elastic workers start with each run())."""
        adapter = ElasticAdapter(self.settings, self.params)
        adapter.start(extra_env_vars=self.env_vars)
        self.adapter = adapter

    def run(self, worker_fn, callbacks=None):
        """worker_fn() on every worker of an elastic job; blocks; the values of
        the last round's ranks in rank order."""
        if self.adapter is None:
            raise RuntimeError("ElasticRayExecutor: call start() first")
        return self.adapter.run(worker_fn, callbacks=callbacks)
