"""One horovod.spark job on the Spark driver: the job's rendezvous store (and
its secret), the Spark job that runs the tasks, the task registry and the
thread that polls it, and the launcher hook that starts ranks in the tasks.

    with SparkJobDriver(sc, "horovod.spark.run", num_tasks=2, elastic=False) as d:
        d.store_call(records.pack_call("horovod.spark.run", fn, args, kwargs))
        tasks = d.wait_for_tasks(2, start_timeout)
        ...  runner/job.py or the elastic driver start ranks via d.launcher(...)
        records = d.read_records(size)

Lifetime: __enter__ starts the store, the monitor thread and the Spark job
(it returns at once). __exit__ tells every task still waiting to stop; if
the block raised, or mark_failed() was called, or the Spark job does not end
within JOIN_S, it cancels the Spark job's group (its tasks are killed, and
their rank processes with them); then it stops the store. Nothing it
started outlives it, except a Spark job that ignores its cancellation
(waited for up to JOIN_S, then left to Spark).
"""
import functools
import secrets
import threading
import time

from horovod_accel.rendezvous.client import StoreClient
from horovod_accel.rendezvous.server import RendezvousStoreServer
from horovod_accel.runner import call_records as records_mod
from horovod_accel.spark.driver import spark_context
from horovod_accel.spark.driver.registry import POLL_S, TaskRegistry
from horovod_accel.spark.driver.remote_rank import SparkRankLauncher
from horovod_accel.spark.task import task_fn

JOIN_S = 30.0


class SparkJobDriver:
    def __init__(self, sc, caller, num_tasks, elastic, nics=None, verbose=False):
        self.caller = caller
        self.num_tasks = num_tasks
        self.elastic = elastic
        self._sc = sc
        self._nics = nics
        self._verbose = verbose
        self._failed = False
        self._stop = threading.Event()
        self.secret = None
        self.server = None
        self.address = None
        self.registry = None
        self.spark_job = None
        self._monitor = None

    # ---- lifetime ----

    def __enter__(self):
        bind, self.address = spark_context.store_address(self._sc, self._nics)
        self.secret = secrets.token_hex(32)
        self.server = RendezvousStoreServer(self.secret, host=bind, verbose=self._verbose)
        self.server.start()
        try:
            self.registry = TaskRegistry(self.server)
            self._monitor = threading.Thread(target=self._poll_loop, name="hvda-spark-monitor",
                                             daemon=True)
            self._monitor.start()
            cfg = task_fn.TaskConfig(store_host=self.address, store_port=self.server.port,
                                     secret=self.secret, elastic=self.elastic,
                                     max_failures=spark_context.max_task_failures(self._sc))
            self.spark_job = spark_context.SparkJob(
                self._sc, self.num_tasks, functools.partial(task_fn.run, cfg),
                barrier=not self.elastic, description=f"{self.caller}: {self.num_tasks} tasks")
            self.spark_job.start()
        except BaseException:
            self._shutdown()
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        self._close(failed=exc_type is not None or self._failed)

    def mark_failed(self):
        """The job failed: __exit__ cancels the Spark job without waiting for it."""
        self._failed = True

    def _close(self, failed):
        self.registry.poll()
        self.registry.stop_all()
        if failed:
            self.spark_job.cancel()
        if not self.spark_job.join(JOIN_S):
            self.spark_job.cancel()
            self.spark_job.join(JOIN_S)
        self._shutdown()

    def _shutdown(self):
        self._stop.set()
        if self._monitor is not None:
            self._monitor.join()
        self.server.stop()

    def _poll_loop(self):
        while not self._stop.wait(POLL_S):
            self.registry.poll()

    # ---- the job ----

    def connect(self):
        """A new StoreClient to the store (the caller owns it)."""
        return StoreClient("127.0.0.1", self.server.port, self.secret, timeout=30)

    def store_call(self, payload):
        """Stores the call (records.pack_call) for the ranks to fetch."""
        with self.connect() as store:
            records_mod.store_call(store, payload)

    def read_records(self, size):
        with self.connect() as store:
            return records_mod.read(store, size)

    def wait_for_tasks(self, n, timeout):
        """Blocks until n tasks are alive; returns their infos (registration
        order). Raises RuntimeError if the Spark job fails first,
        TimeoutError after `timeout` s."""
        deadline = time.monotonic() + timeout
        while True:
            alive = self.registry.alive()
            if len(alive) >= n:
                return alive[:n] if not self.elastic else alive
            if self.spark_job.done.is_set():
                raise RuntimeError(self._spark_job_ended(len(alive), n))
            if time.monotonic() >= deadline:
                raise TimeoutError(self._start_timeout_message(len(alive), n, timeout))
            self.spark_job.done.wait(POLL_S)

    def launcher(self, task_of, executable=None, stdout=None, stderr=None):
        """The launcher hook for runner/job.py and the elastic driver."""
        return SparkRankLauncher(self.registry, self.server, self.connect, task_of, executable,
                                 stdout, stderr)

    # ---- messages ----

    def _spark_job_ended(self, started, n):
        e = self.spark_job.error
        if e is None:
            return (f"{self.caller}: the Spark job ended after {started} of its {n} tasks "
                    "registered, without an error")
        hint = ""
        if "horovod_accel" in str(e) and ("ModuleNotFoundError" in str(e) or
                                          "No module named" in str(e)):
            hint = ("\nThe executors' Python cannot import horovod_accel: point PYSPARK_PYTHON "
                    "(set before the SparkContext starts) at a Python that has horovod installed.")
        return (f"{self.caller}: the Spark job failed before all {n} tasks registered "
                f"({started} did): {spark_context.describe_spark_error(e)}{hint}")

    def _start_timeout_message(self, started, n, timeout):
        mode = ("barrier mode starts every task at once or none, so the cluster needs "
                f"{n} free task slots at the same time" if not self.elastic else
                f"the job needs {n} tasks running to start")
        return (f"{self.caller}: only {started} of the {n} Spark tasks started within "
                f"{timeout:g} s (start_timeout / HOROVOD_SPARK_START_TIMEOUT). Each rank runs in "
                f"its own Spark task and {mode}; this SparkContext ({self._sc.master}) offers "
                f"{self._sc.defaultParallelism} (spark.default.parallelism). Lower num_proc, add "
                "executors or cores, or raise start_timeout if executors are allocated on "
                "demand. The Spark job was cancelled.")
