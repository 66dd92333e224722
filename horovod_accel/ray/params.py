"""RayExecutor's arguments, checked once at construction: a wrong combination
raises ValueError there (upstream's rules, plus the checks upstream left to
an assert or a crash in start()). Pure; no Ray calls."""
import dataclasses


def _positive_int(name, value, allow_none=False):
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"RayExecutor: {name} must be a positive integer, got {value!r}")


def _positive_number(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"RayExecutor: {name} must be a positive number, got {value!r}")


@dataclasses.dataclass
class Resources:
    """What one worker actor reserves. gpus_per_worker is 0 without use_gpu."""
    cpus_per_worker: float = 1
    use_gpu: bool = False
    gpus_per_worker: float = 0

    @classmethod
    def check(cls, cpus_per_worker, use_gpu, gpus_per_worker):
        _positive_number("cpus_per_worker", cpus_per_worker)
        if gpus_per_worker and not use_gpu:
            raise ValueError("RayExecutor: gpus_per_worker is set but use_gpu is False; pass "
                             "use_gpu=True to give the workers GPUs")
        if use_gpu and gpus_per_worker is not None:
            _positive_number("gpus_per_worker", gpus_per_worker)
        gpus = (gpus_per_worker or 1) if use_gpu else 0
        return cls(cpus_per_worker=cpus_per_worker, use_gpu=bool(use_gpu), gpus_per_worker=gpus)

    def actor_options(self):
        return {"num_cpus": self.cpus_per_worker, "num_gpus": self.gpus_per_worker}

    def bundle(self, workers=1):
        """A placement-group bundle for `workers` actors."""
        out = {"CPU": self.cpus_per_worker * workers}
        if self.gpus_per_worker:
            out["GPU"] = self.gpus_per_worker * workers
        return out


@dataclasses.dataclass
class StaticParams:
    """A fixed set of workers: num_workers packed (PACK placement group), or
    num_hosts x num_workers_per_host spread one bundle per node."""
    resources: Resources
    num_workers: int = None
    num_hosts: int = None
    num_workers_per_host: int = 1
    use_current_placement_group: bool = True

    @property
    def elastic(self):
        return False

    @property
    def world_size(self):
        return self.num_workers if self.num_workers is not None else \
            self.num_hosts * self.num_workers_per_host


@dataclasses.dataclass
class ElasticParams:
    """Elastic mode: between min_workers and max_workers (None: no limit)
    workers on the hosts Ray has, re-formed when workers fail."""
    resources: Resources
    min_workers: int = 1
    max_workers: int = None
    reset_limit: int = None
    cooldown_range: tuple = None
    elastic_timeout: float = 600
    override_discovery: bool = True

    @property
    def elastic(self):
        return True


def check(num_workers=None, num_hosts=None, num_workers_per_host=1, cpus_per_worker=1,
          use_gpu=False, gpus_per_worker=None, use_current_placement_group=True,
          min_workers=None, max_workers=None, reset_limit=None, cooldown_range=None,
          elastic_timeout=600, override_discovery=True):
    """RayExecutor's keyword arguments -> StaticParams or ElasticParams.
    Raises ValueError naming the argument(s) at fault."""
    if max_workers is not None and not min_workers:
        raise ValueError("RayExecutor: max_workers is given without a positive min_workers; "
                         "elastic jobs need min_workers (the fewest workers training may "
                         "continue with)")
    if min_workers is not None and num_workers is not None:
        raise ValueError("RayExecutor: both min_workers and num_workers are given; a job is "
                         "either elastic (min_workers, max_workers) or not (num_workers)")
    resources = Resources.check(cpus_per_worker, use_gpu, gpus_per_worker)
    if min_workers is not None:
        if num_hosts is not None:
            raise ValueError("RayExecutor: num_hosts does not apply to elastic jobs "
                             "(min_workers): their hosts are the Ray nodes with free slots")
        _positive_int("min_workers", min_workers)
        _positive_int("max_workers", max_workers, allow_none=True)
        if max_workers is not None and max_workers < min_workers:
            raise ValueError(f"RayExecutor: max_workers ({max_workers}) is smaller than "
                             f"min_workers ({min_workers})")
        if reset_limit is not None and (isinstance(reset_limit, bool) or
                                        not isinstance(reset_limit, int) or reset_limit < 0):
            raise ValueError(f"RayExecutor: reset_limit must be an integer >= 0, got "
                             f"{reset_limit!r}")
        if cooldown_range is not None:
            lo, hi = cooldown_range
            if not 1 <= lo <= hi:
                raise ValueError(f"RayExecutor: cooldown_range {tuple(cooldown_range)}: expected "
                                 "(MIN, MAX) seconds with 1 <= MIN <= MAX")
            cooldown_range = (lo, hi)
        if isinstance(elastic_timeout, bool) or not isinstance(elastic_timeout, (int, float)) or \
                elastic_timeout < 0:
            raise ValueError(f"RayExecutor: elastic_timeout must be a number of seconds >= 0, "
                             f"got {elastic_timeout!r}")
        return ElasticParams(resources=resources, min_workers=min_workers,
                             max_workers=max_workers, reset_limit=reset_limit,
                             cooldown_range=cooldown_range, elastic_timeout=elastic_timeout,
                             override_discovery=override_discovery)
    if num_workers is not None and num_hosts is not None:
        raise ValueError("RayExecutor: give num_workers (workers packed on any nodes) or "
                         "num_hosts with num_workers_per_host (the same number on each node), "
                         "not both")
    if num_workers is None and num_hosts is None:
        raise ValueError("RayExecutor: give num_workers, or num_hosts and num_workers_per_host "
                         "(or min_workers for an elastic job)")
    _positive_int("num_workers", num_workers, allow_none=True)
    _positive_int("num_hosts", num_hosts, allow_none=True)
    _positive_int("num_workers_per_host", num_workers_per_host)
    return StaticParams(resources=resources, num_workers=num_workers, num_hosts=num_hosts,
                        num_workers_per_host=num_workers_per_host,
                        use_current_placement_group=use_current_placement_group)
