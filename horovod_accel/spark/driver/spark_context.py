"""Everything horovod.spark asks of pyspark on the driver: the active
SparkContext, facts about its master, and SparkJob, the Spark job that runs
a horovod.spark job's tasks on its own thread, in its own job group.
"""
import itertools
import re
import threading

from horovod_accel.rendezvous import network

_LOCAL_WITH_FAILURES = re.compile(r"local\[\s*(\d+|\*)\s*,\s*(\d+)\s*\]")
_job_ids = itertools.count(1)


def active_context(caller):
    """The SparkContext of this process; RuntimeError if there is none."""
    import pyspark  # noqa: PLC0415
    sc = pyspark.SparkContext._active_spark_context  # noqa: SLF001 - pyspark's own accessor
    if sc is None:
        raise RuntimeError(
            f"{caller}: there is no active SparkContext in this process. horovod.spark runs on "
            "the Spark driver: create a session first, e.g. "
            "SparkSession.builder.master('local[2]').getOrCreate() (a Spark Connect session "
            "has no SparkContext and cannot run Spark tasks in barrier mode)")
    return sc


def is_local(sc):
    """Whether every executor runs on this machine (local, local[N], local-cluster)."""
    return sc.master.startswith("local")


def max_task_failures(sc):
    """How many times Spark runs a task before it fails the job: `F` of
    local[N,F], 1 for other local masters, else spark.task.maxFailures (4)."""
    m = _LOCAL_WITH_FAILURES.fullmatch(sc.master.strip())
    if m:
        return int(m.group(2))
    if sc.master.startswith("local") and not sc.master.startswith("local-cluster"):
        return 1
    return int(sc.getConf().get("spark.task.maxFailures", "4"))


def store_address(sc, nics):
    """(bind address, address the tasks reach the driver's store at)."""
    if is_local(sc):
        return "127.0.0.1", "127.0.0.1"
    ip = network.first_interface_ipv4(nics)
    if ip:
        return "0.0.0.0", ip
    if nics:
        raise ValueError(f"none of the network interfaces {', '.join(nics)} (nics) has an IPv4 "
                         "address on the Spark driver")
    host = sc.getConf().get("spark.driver.host", None)
    if not host:
        raise ValueError("spark.driver.host is not set, so the executors' address of this "
                         "driver is unknown; pass nics=[<interface>]")
    return "0.0.0.0", host


def describe_spark_error(e, max_lines=12):
    """The first lines of a Spark job's failure (a Py4J error carries the
    whole Java stack; its head says what went wrong)."""
    text = str(e).strip()
    keep = []
    for line in text.splitlines():
        if line.lstrip().startswith("at ") and keep:
            continue  # Java frames
        keep.append(line)
        if len(keep) >= max_lines:
            break
    return "\n".join(keep)


class SparkJob:
    """Runs the Spark job of `num_tasks` partitions, each mapped through
    `mapper(index, rows)`, on a daemon thread, in job group `group` (so
    cancel() stops its tasks). barrier=True uses barrier execution mode:
    every task starts at once or none does.

    Lifetime: start() returns at once; `done` is set when the job ended,
    then `error` is the exception it failed with (None if it succeeded) and
    `result` its collected rows.
    """

    def __init__(self, sc, num_tasks, mapper, barrier, description):
        self.group = f"horovod.spark.run.{next(_job_ids)}"
        self.done = threading.Event()
        self.error = None
        self.result = None
        self.cancelled = False
        self._sc = sc
        self._num_tasks = num_tasks
        self._mapper = mapper
        self._barrier = barrier
        self._description = description
        # InheritableThread: the job sees the caller's local properties (its
        # scheduler pool, ...), as a job submitted from the caller's thread would.
        from pyspark.util import InheritableThread  # noqa: PLC0415
        self._thread = InheritableThread(target=self._run, name=f"hvda-spark-job-{self.group}",
                                         daemon=True)

    def start(self):
        self._thread.start()
        return self

    def _run(self):
        try:
            # A job group is a property of the submitting thread (pyspark
            # pins each Python thread to a JVM thread).
            self._sc.setJobGroup(self.group, self._description, interruptOnCancel=True)
            rdd = self._sc.parallelize(range(self._num_tasks), self._num_tasks)
            if self._barrier:
                rdd = rdd.barrier()
            self.result = rdd.mapPartitionsWithIndex(self._mapper).collect()
        except Exception as e:  # noqa: BLE001 - reported by the caller
            self.error = e
        finally:
            self.done.set()

    def cancel(self):
        """Cancels the job's tasks (kills their Python workers, whose rank
        processes die with them). Does not block; idempotent."""
        if not self.done.is_set() and not self.cancelled:
            self.cancelled = True
            self._sc.cancelJobGroup(self.group)

    def join(self, timeout):
        """Waits up to `timeout` s for the job to end; returns whether it did."""
        return self.done.wait(timeout)
