"""`horovod.ray`: Horovod jobs whose ranks are Ray actors (upstream
horovod.ray's API, 0.28.1).

    import ray
    from horovod.ray import RayExecutor

    def train():
        import horovod.torch as hvd
        hvd.init()
        return hvd.rank()

    ray.init()
    executor = RayExecutor(RayExecutor.create_settings(timeout_s=30), num_workers=2)
    executor.start()
    print(executor.run(train))   # [0, 1]
    executor.shutdown()

The caller of RayExecutor is the job's driver: it serves the rendezvous store
(horovod_accel/rendezvous/) and tells every actor its rank, as horovodrun
tells its processes; `hvd.init()` inside an actor joins the job. docs/ray.md
explains the model, elastic mode and the differences from upstream.

Modules, one purpose each:
  executor.py        RayExecutor (the public facade); upstream's module
                     horovod.ray.runner is this one (Coordinator, MiniSettings)
  settings.py        create_settings' MiniSettings
  params.py          checks of RayExecutor's arguments (ValueError as upstream)
  worker.py          BaseHorovodWorker, the actor class every rank runs in
  coordinator.py     ranks from where Ray placed the actors; the store; the
                     environment of every rank
  strategy.py        placement groups: PACK (num_workers) or STRICT_SPREAD
                     (num_hosts x num_workers_per_host)
  static_adapter.py  a fixed set of actors: start / run / execute / shutdown
  results.py         collecting the actors' results; a failure names its rank
  discovery.py       elastic mode's hosts: the Ray nodes and their slots
  actor_rank.py      one elastic worker actor, as the elastic driver sees it
  elastic_adapter.py elastic mode: horovodrun's elastic driver over actors
  elastic.py         ElasticRayExecutor (upstream's deprecated elastic API)
  ray_logger.py      `ray_logger.log(dict)` in a worker -> the run's callbacks
  callbacks.py       the driver side of ray_logger
  utils.py           detect_nics, nics_to_env_var, map_blocking
"""
try:
    import ray as _ray
except ImportError as _e:
    raise ImportError(
        "horovod.ray needs Ray, which is not installed in this Python "
        f"({_e}). Install it with `pip install 'ray==2.60.*'` (or run "
        "scripts/setup_ray.sh in the horovod_accel source tree).") from _e

if int(_ray.__version__.split(".")[0]) < 2:
    raise ImportError(f"horovod.ray needs Ray 2.x; this Python has Ray {_ray.__version__}. "
                      "Upgrade it with `pip install -U 'ray==2.60.*'`.")

from horovod_accel.ray.elastic import ElasticRayExecutor  # noqa: E402
from horovod_accel.ray.executor import RayExecutor  # noqa: E402
from horovod_accel.ray.worker import BaseHorovodWorker  # noqa: E402

__all__ = ["RayExecutor", "BaseHorovodWorker", "ElasticRayExecutor"]
