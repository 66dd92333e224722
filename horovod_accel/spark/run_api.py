"""`horovod.spark.run` and `horovod.spark.run_elastic`: a Horovod job whose
ranks run in Spark tasks. Upstream's module horovod.spark.runner is this one
(the `horovod` alias package maps the name).

How (docs/spark.md has the whole picture):
- the driver (this process) serves the job's rendezvous store, the one
  horovodrun serves; the call travels through it as in horovod.run;
- one Spark job runs the tasks (service.py): barrier mode for run (all
  start together or none), plain tasks for run_elastic (one may fail and be
  retried alone); each task registers and runs the rank processes the driver
  starts on it (task/task_fn.py);
- horovodrun's own machinery watches the ranks: runner/job.py (fail-fast)
  for run, the elastic driver for run_elastic, with a launcher hook that
  starts ranks in Spark tasks (driver/remote_rank.py).
"""
from horovod_accel.common import log
from horovod_accel.runner import call_records as records
from horovod_accel.runner import job
from horovod_accel.spark.driver import args as args_mod
from horovod_accel.spark.driver import placement, spark_context
from horovod_accel.spark.driver.service import SparkJobDriver

RUN = "horovod.spark.run"
RUN_ELASTIC = "horovod.spark.run_elastic"
RANK_MAIN = "horovod_accel.spark.task.rank_main"


def _command(executable):
    # What the tasks run (documentation only: each task builds it, with its
    # own Python when executable is None).
    return [executable or "<the Spark task's python>", "-m", RANK_MAIN]


def _raise_for_signal(caller, signum):
    import signal  # noqa: PLC0415
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise RuntimeError(f"{caller}: the job was stopped by {signal.Signals(signum).name}")


def run(fn, args=(), kwargs={}, num_proc=None, start_timeout=None, use_mpi=None,  # noqa: B006
        use_gloo=None, extra_mpi_args=None, env=None, stdout=None, stderr=None, verbose=1,
        nics=None, prefix_output_with_timestamp=False, executable=None):
    """Runs `fn(*args, **kwargs)` on `num_proc` ranks, each in its own Spark
    task, as one Horovod job; returns the ranks' return values in rank order.

    num_proc: default spark.default.parallelism. start_timeout: seconds for
    all tasks to start and register (default $HOROVOD_SPARK_START_TIMEOUT,
    600); barrier mode starts them all at once, so without enough free task
    slots this raises TimeoutError and cancels the Spark job. use_mpi=True:
    ValueError (not supported on Spark); use_gloo, extra_mpi_args: accepted.
    env: variables for the ranks, on top of their executor's environment.
    stdout/stderr: streams for the ranks' rank-prefixed output (default the
    driver's). verbose: 0-2 (2 prints the launcher's steps). nics: network
    interfaces for the driver's address and Gloo. executable: the Python that
    runs each rank (default: the Python of its Spark task).

    Raises RankError (a RuntimeError) naming the first rank that failed, its
    Spark task and host, with its exception and traceback; the other ranks
    are stopped and the Spark job is cancelled.
    """
    args_mod.check_call(RUN, fn, args, kwargs)
    args_mod.controller(RUN, use_mpi, use_gloo, extra_mpi_args)
    sc = spark_context.active_context(RUN)
    num_proc = args_mod.count(RUN, "num_proc", num_proc, sc.defaultParallelism)
    timeout = args_mod.start_timeout(RUN, start_timeout)
    nics = args_mod.nic_list(nics)
    rank_env = args_mod.rank_env(RUN, env, nics)
    payload = records.pack_call(RUN, fn, args, kwargs or {})
    if verbose >= 1:
        log.get_logger(__name__).info("Running %d processes...", num_proc)
    with SparkJobDriver(sc, RUN, num_proc, elastic=False, nics=nics,
                        verbose=verbose >= 2) as d:
        d.store_call(payload)
        tasks = d.wait_for_tasks(num_proc, timeout)
        slots, task_of_rank = placement.assign(tasks)
        host_of = {t["name"]: t["hostname"] for t in tasks}
        where = {r: (t, host_of[t]) for r, t in task_of_rank.items()}
        spec = job.JobSpec(
            slots=slots, command=_command(executable), env=rank_env, secret=d.secret,
            store_port=d.server.port, store_addr={s.hostname: d.address for s in slots},
            local_hosts=set(), timestamp_output=prefix_output_with_timestamp,
            verbose=verbose >= 2, start_timeout=timeout,
            launcher=d.launcher(lambda slot: task_of_rank[slot.rank], executable, stdout,
                                stderr))
        code, failed, launch_error, signum = job.run_job_outcome(spec)
        recs = d.read_records(num_proc)
        if code != 0:
            d.mark_failed()
    if launch_error is not None:
        raise RuntimeError(f"{RUN}: {launch_error}")
    if signum is not None:
        _raise_for_signal(RUN, signum)
    if failed is not None:
        # A rank that died without a record is the cause (the exceptions of
        # the others are its consequences); else the first exception caught.
        first = records.first_raised(recs)
        if failed.rank not in recs or first is None:
            raise records.died_error(RUN, failed, placement.describe(where), failed.rank in recs)
        err, exc = records.raised_error(RUN, first, placement.describe(where), recs[first])
        raise err from exc
    if code != 0:
        raise RuntimeError(f"{RUN}: the job failed with exit code {code}")
    return records.results(RUN, recs, num_proc, placement.describe(where))


def run_elastic(fn, args=(), kwargs={}, num_proc=None, min_num_proc=None,  # noqa: B006
                max_num_proc=None, start_timeout=None, elastic_timeout=None, reset_limit=None,
                env=None, stdout=None, stderr=None, verbose=1, nics=None,
                prefix_output_with_timestamp=False, min_np=None, max_np=None):
    """Runs `fn(*args, **kwargs)` as an elastic Horovod job (fn uses
    hvd.elastic.run) on Spark tasks; returns the return values of the last
    round's ranks in rank order.

    num_proc ranks start (default spark.default.parallelism); the job goes
    on while at least min_num_proc (default num_proc) run and grows up to
    max_num_proc (default num_proc), which is also the number of Spark tasks.
    A rank whose process fails, or whose task is lost (its executor or
    Python worker died), is dropped and the others reset; a replacement
    task attempt that Spark starts (spark.task.maxFailures > 1) joins at the
    next commit. elastic_timeout (default $HOROVOD_ELASTIC_TIMEOUT, 600):
    how long to wait for min_num_proc ranks; reset_limit: the job fails at
    the (reset_limit+1)-th reset. min_np/max_np: deprecated spellings.
    Other arguments as in run(). See docs/spark.md for the design and limits.
    """
    from horovod_accel.runner.elastic import settings as elastic_settings  # noqa: PLC0415
    import warnings  # noqa: PLC0415
    for old, value, new in (("min_np", min_np, "min_num_proc"), ("max_np", max_np,
                                                                  "max_num_proc")):
        if value is not None:
            warnings.warn(f"{old} is deprecated, use {new} instead", DeprecationWarning,
                          stacklevel=2)
    min_num_proc = min_np if min_np is not None else min_num_proc
    max_num_proc = max_np if max_np is not None else max_num_proc
    args_mod.check_call(RUN_ELASTIC, fn, args, kwargs)
    sc = spark_context.active_context(RUN_ELASTIC)
    num_proc = args_mod.count(RUN_ELASTIC, "num_proc", num_proc, sc.defaultParallelism)
    num_proc, min_np, max_np = args_mod.elastic_counts(RUN_ELASTIC, num_proc, min_num_proc,
                                                       max_num_proc)
    timeout = args_mod.start_timeout(RUN_ELASTIC, start_timeout)
    elastic_timeout = args_mod.seconds(RUN_ELASTIC, "elastic_timeout", elastic_timeout,
                                       "HOROVOD_ELASTIC_TIMEOUT",
                                       elastic_settings.DEFAULT_ELASTIC_TIMEOUT_S)
    reset_limit = args_mod.reset_limit(RUN_ELASTIC, reset_limit)
    nics = args_mod.nic_list(nics)
    rank_env = args_mod.rank_env(RUN_ELASTIC, env, nics)
    if verbose >= 1:
        log.get_logger(__name__).info("Running %d processes (elastic: %d to %d)...", num_proc,
                                      min_np, max_np)
    payload = records.pack_call(RUN_ELASTIC, fn, args, kwargs or {})
    from horovod_accel.spark.driver import elastic_job  # noqa: PLC0415
    return elastic_job.run(sc, payload, num_proc, min_np, max_np, timeout,
                           elastic_timeout, reset_limit, rank_env, stdout, stderr, verbose, nics,
                           prefix_output_with_timestamp)
