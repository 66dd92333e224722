"""Where an estimator runs its training function (upstream's
horovod.spark.common.backend): `SparkBackend` runs it with horovod.spark.run
on the active SparkContext. A custom backend is any object with the same two
methods (`run`, `num_processes`), e.g. to train outside the Spark
application."""
import abc


class Backend(abc.ABC):
    """Runs the distributed training function."""

    @abc.abstractmethod
    def run(self, fn, args=(), kwargs=None, env=None):
        """Runs fn(*args, **kwargs) on every process; blocks until all end;
        returns their results in rank order. env: extra environment
        variables for the processes."""

    @abc.abstractmethod
    def num_processes(self):
        """The number of training processes."""


def default_num_proc():
    """spark.default.parallelism of the active SparkContext."""
    from pyspark import SparkContext  # noqa: PLC0415
    sc = SparkContext._active_spark_context  # noqa: SLF001
    if sc is None:
        raise RuntimeError("horovod.spark estimators need an active SparkContext in this process "
                           "(SparkSession.builder...getOrCreate()) to choose num_proc")
    return sc.defaultParallelism


class SparkBackend(Backend):
    """horovod.spark.run with num_proc processes (default
    spark.default.parallelism, read when the backend is made). env: extra
    variables for every process, on top of its executor's environment (not
    the driver's, unlike upstream, whose default was a copy of os.environ).
    kwargs: more arguments of horovod.spark.run (start_timeout, verbose,
    nics, stdout, stderr, prefix_output_with_timestamp, executable)."""

    def __init__(self, num_proc=None, env=None, **kwargs):
        self._num_proc = num_proc or default_num_proc()
        self._env = dict(env or {})
        self._kwargs = kwargs

    def run(self, fn, args=(), kwargs=None, env=None):
        from horovod_accel.spark import run_api  # noqa: PLC0415
        full_env = {**self._env, **(env or {})}
        return run_api.run(fn, args=args, kwargs=kwargs or {}, num_proc=self._num_proc,
                           env=full_env, **self._kwargs)

    def num_processes(self):
        return self._num_proc
