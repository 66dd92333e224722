"""Horovod on Spark (upstream's `horovod.spark`): `run` and `run_elastic`
run a Horovod job whose ranks are Spark tasks of the active SparkContext.

    import horovod.spark
    def train(lr):
        import horovod.torch as hvd
        hvd.init()
        ...
        return hvd.rank()
    horovod.spark.run(train, args=(0.1,), num_proc=2)   # -> [0, 1]

Needs pyspark on the driver and the executors (`pip install pyspark`);
docs/spark.md tells how ranks map to executors and what differs from
upstream.

Modules, one purpose each:
  run_api.py   run / run_elastic: arguments, the static job's flow
               (upstream's module horovod.spark.runner is this one)
  protocol.py  the store keys between the driver and its Spark tasks
  driver/      the Spark driver's side (store, Spark job, task registry,
               ranks in tasks, results, the elastic job)
  task/        the Spark task's side (register, run rank processes)
"""
import importlib.util

if importlib.util.find_spec("pyspark") is None:
    raise ImportError("horovod.spark needs pyspark, which is not installed in this Python: "
                      "`pip install pyspark` (pyspark 4 needs Java 17 or 21: on Debian/Ubuntu "
                      "`apt-get install openjdk-17-jre-headless`), or run scripts/setup_spark.sh")

__all__ = ["run", "run_elastic"]


def __getattr__(name):
    # Imported on first use, so that the processes of the tasks and ranks,
    # which import horovod_accel.spark.task, do not load the driver's side.
    if name in __all__:
        from horovod_accel.spark import run_api  # noqa: PLC0415
        value = getattr(run_api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
