"""run_elastic's job: horovodrun's elastic driver (runner/elastic/driver.py)
over the tasks of one plain (non-barrier) Spark job.

The Spark job has max_num_proc tasks; each registers and waits for the
driver's commands. Discovery (discovery.py) reports every alive task as a
host with one slot; the elastic driver forms rounds over them and starts its
workers through the Spark launcher hook, so everything it does for
horovodrun (rounds, resets, blacklisting a failed worker's host, the
elastic and reset limits) applies unchanged. A task whose rank process
failed leaves the job and fails its Spark attempt when Spark may retry it;
the retry registers as a new host, which the driver adds at the next commit.
"""
import os
import signal

from horovod_accel.common import settings
from horovod_accel.runner.elastic.driver import ElasticDriver, ElasticSpec
from horovod_accel.runner import call_records as records
from horovod_accel.spark.driver import placement, spark_context
from horovod_accel.spark.driver.discovery import SparkTaskDiscovery
from horovod_accel.spark.driver.service import SparkJobDriver

CALLER = "horovod.spark.run_elastic"


def _ready_timeout(rank_env):
    """Seconds a survivor may take to reset, as horovodrun's elastic mode
    allows: max(60, 2 * HOROVOD_GLOO_TIMEOUT_SECONDS)."""
    name = "HOROVOD_GLOO_TIMEOUT_SECONDS"
    env = {name: rank_env.get(name) or os.environ.get(name, "")}
    try:
        return max(60.0, 2 * settings.read(name, env))
    except ValueError as e:
        raise ValueError(f"{CALLER}: {e}") from None


def _final_placement(driver, discovery):
    """{rank: (task name, host name)} of the last round."""
    return {rank: discovery.where(driver.workers[wid].hostname)
            for rank, wid in enumerate(driver.members)}


def run(sc, payload, num_proc, min_np, max_np, start_timeout, elastic_timeout, reset_limit,
        rank_env, stdout, stderr, verbose, nics, timestamp_output):
    """Runs the packed call (records.pack_call); blocks until the job ends;
    returns the last round's results in rank order, or raises
    RuntimeError/RankError saying why the job failed."""
    with SparkJobDriver(sc, CALLER, max_np, elastic=True, nics=nics,
                        verbose=verbose >= 2) as d:
        d.store_call(payload)
        d.wait_for_tasks(num_proc, start_timeout)
        discovery = SparkTaskDiscovery(d.registry)
        spec = ElasticSpec(
            num_proc=num_proc, min_np=min_np, max_np=max_np, discovery=discovery,
            command=["<the Spark task's python>", "-m", "horovod_accel.spark.task.rank_main"],
            env=rank_env, secret=d.secret, store=d.server, store_port=d.server.port,
            store_addr=lambda host: d.address, is_local=lambda host: False,
            elastic_timeout=elastic_timeout, reset_limit=reset_limit,
            ready_timeout=_ready_timeout(rank_env), timestamp_output=timestamp_output,
            verbose=verbose >= 2, start_timeout=start_timeout,
            launcher=d.launcher(discovery.task_of, None, stdout, stderr))
        driver = ElasticDriver(spec)
        code = driver.run()
        size = driver.final_size()
        recs = d.read_records(size)
        where = _final_placement(driver, discovery)
        spark_error = d.spark_job.error if d.spark_job.done.is_set() else None
        if code != 0:
            d.mark_failed()
    if driver.signum is not None:
        if driver.signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise RuntimeError(f"{CALLER}: the job was stopped by "
                           f"{signal.Signals(driver.signum).name}")
    if code != 0:
        first = records.first_raised(recs)
        if first is not None:
            err, exc = records.raised_error(CALLER, first, placement.describe(where), recs[first])
            raise err from exc
        why = driver.error or f"the job failed (exit code {code})"
        if spark_error is not None:  # e.g. a task that used up spark.task.maxFailures
            why += ("\nThe Spark job running the tasks failed first: " +
                    spark_context.describe_spark_error(spark_error))
        raise RuntimeError(f"{CALLER}: {why}")
    return records.results(CALLER, recs, size, placement.describe(where))
