"""horovod.spark.run and run_elastic (horovod_accel/spark/) on real Spark.

One SparkSession serves the whole module: MASTER, a local-cluster of two
executor JVMs with two task slots each (the shape of a real cluster: ranks
in separate executors, which Spark restarts or retries tasks in), whose
SparkContext runs in this process, the Spark driver. The upstream-style
script runs in its own process with its own session (local[2]), and the
error cases without a session in subprocesses. Every test
has a hard timeout (SIGALRM, then faulthandler exits the process), so a hang
fails instead of stalling the suite. Skipped without pyspark or Java
(scripts/setup_spark.sh installs both).

Rank functions live in spark_scripts/rank_fns.py; data is f(rank, index).
"""
import io
import json
import os
import re
import sys
import threading
import time

import pytest

from launch_util import REPO, run

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "spark_scripts")
sys.path.insert(0, SCRIPTS)
import rank_fns  # noqa: E402


from spark_testing import hard_timeout, skip_reason, timeout  # noqa: E402,F401
from spark_testing import stop_jvm as _stop_jvm  # noqa: E402

pytestmark = pytest.mark.skipif(skip_reason() is not None, reason=str(skip_reason()))

MASTER = "local-cluster[2,2,1024]"  # 4 task slots; a failed task is retried (maxFailures 4)


@pytest.fixture(scope="module")
def spark():
    env = {"PYSPARK_PYTHON": sys.executable, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    from pyspark.sql import SparkSession  # noqa: PLC0415
    session = (SparkSession.builder.master(MASTER).appName("hvda-test-spark-run")
               .config("spark.ui.enabled", "false").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
        _stop_jvm()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _assert_no_spark_jobs(session, within_s=15):
    """The job's Spark tasks are gone (cancelled or finished) within within_s."""
    tracker = session.sparkContext.statusTracker()
    deadline = time.monotonic() + within_s
    while tracker.getActiveJobsIds() or tracker.getActiveStageIds():
        assert time.monotonic() < deadline, (
            f"Spark jobs {list(tracker.getActiveJobsIds())} still active {within_s} s later")
        time.sleep(0.2)


# ------------------------------------------------------------------ run: results

@pytest.mark.parametrize("num_proc", [1, 2, 3])
def test_results_in_rank_order(spark, num_proc):
    import horovod.spark  # noqa: PLC0415
    out = horovod.spark.run(rank_fns.topology, args=(7,), num_proc=num_proc, verbose=0)
    n = num_proc
    assert [o["rank"] for o in out] == list(range(n))
    assert all(o["size"] == n and o["x"] == 7 and o["env_rank"] == o["rank"] for o in out)
    # Two executors, one machine: every rank is local to the others (shared memory).
    assert [o["local_rank"] for o in out] == list(range(n))
    assert {(o["local_size"], o["cross_size"]) for o in out} == {(n, 1)}


def test_collectives_in_fn_at_the_default_num_proc(spark):
    import horovod.spark  # noqa: PLC0415
    out = horovod.spark.run(rank_fns.collectives)
    n = spark.sparkContext.defaultParallelism  # num_proc's default: 4 task slots here
    assert len(out) == n
    base = [0.0, 1.0, 2.0, 3.0]
    for o in out:
        assert o["sum"] == [b * n * (n + 1) / 2 for b in base]   # sum of base * (r + 1)
        assert o["mean"] == [b + (n - 1) / 2 for b in base]      # mean of base + r
        assert o["gather"] == [float(r) for r in range(n) for _ in range(r + 1)]
        assert o["bcast"] == [(n - 1) * 10 + 7.0] * 3            # from the last rank


def test_output_env_executable_and_streams(spark):
    import horovod.spark  # noqa: PLC0415
    out_s, err_s = io.StringIO(), io.StringIO()
    res = horovod.spark.run(rank_fns.chatty, args=("T",), num_proc=2,
                            env={"HVDA_SPARK_TEST_VAR": "v"}, stdout=out_s, stderr=err_s,
                            executable=sys.executable, prefix_output_with_timestamp=True)
    assert res == [{"var": "v", "python": sys.executable, "devices": []}] * 2
    for r in (0, 1):
        assert re.search(rf"^\w{{3}} .*\[{r}\]<stdout>:out T from {r}$", out_s.getvalue(), re.M)
        assert re.search(rf"^\w{{3}} .*\[{r}\]<stderr>:err T from {r}$", err_s.getvalue(), re.M)
    assert "err T" not in out_s.getvalue() and "out T" not in err_s.getvalue()


def test_secret_not_on_command_lines_or_start_environments(spark):
    import horovod.spark  # noqa: PLC0415
    for o in horovod.spark.run(rank_fns.secret_exposure, num_proc=2):
        assert o["secret_len"] == 64
        assert o["cmdlines"] == [], f"the secret is on the command line of pids {o['cmdlines']}"
        assert not o["own_environ"] and not o["task_environ"] and not o["task_cmdline"]


# ------------------------------------------------------------------ run: failures

def test_rank_exception_names_rank_within_seconds(spark, tmp_path):
    import horovod.spark  # noqa: PLC0415
    from horovod.runner.run_api import RankError  # noqa: PLC0415
    marker = tmp_path / "raised_at"
    with pytest.raises(RankError) as info:
        horovod.spark.run(rank_fns.raise_on_rank_1, args=(str(marker),), num_proc=2)
    seconds = time.time() - float(marker.read_text())
    e = info.value
    assert e.rank == 1 and e.exc_type == "ValueError" and e.message == "bad value on rank 1"
    assert "rank 1 (Spark task 1.0 on" in str(e) and "Traceback on rank 1" in str(e)
    assert "raise_on_rank_1" in e.remote_traceback
    assert isinstance(e.__cause__, ValueError)
    print(f"the driver raised {seconds:.2f} s after rank 1 did")  # shown with -s
    assert seconds < 10, f"the driver raised {seconds:.1f} s after rank 1 did"
    _assert_no_spark_jobs(spark)


def test_rank_exit_reported_with_its_stderr(spark):
    import horovod.spark  # noqa: PLC0415
    from horovod.runner.run_api import RankError  # noqa: PLC0415
    with pytest.raises(RankError) as info:
        horovod.spark.run(rank_fns.exit_on_rank_1, num_proc=2)
    e = info.value
    assert e.rank == 1 and e.how == "exit code 3", str(e)
    assert "rank 1 is leaving" in e.stderr_tail and "rank 1 is leaving" in str(e)
    _assert_no_spark_jobs(spark)


def test_too_few_slots_fails_at_start_timeout(spark):
    import horovod.spark  # noqa: PLC0415
    n = spark.sparkContext.defaultParallelism + 1
    t0 = time.monotonic()
    with pytest.raises(TimeoutError) as info:
        horovod.spark.run(rank_fns.topology, args=(0,), num_proc=n, start_timeout=6)
    seconds = time.monotonic() - t0
    assert 6 <= seconds < 30, seconds
    text = str(info.value)
    assert f"only 0 of the {n} Spark tasks started within 6 s" in text
    assert "HOROVOD_SPARK_START_TIMEOUT" in text and "Lower num_proc" in text
    _assert_no_spark_jobs(spark)


def test_argument_errors(spark):
    import horovod.spark  # noqa: PLC0415
    with pytest.raises(ValueError, match="horovod#3165"):
        horovod.spark.run(rank_fns.topology, use_mpi=True)
    with pytest.raises(ValueError, match="num_proc must be a positive integer"):
        horovod.spark.run(rank_fns.topology, num_proc=0)
    with pytest.raises(TypeError, match="fn must be callable"):
        horovod.spark.run("not a function")
    with pytest.raises(TypeError, match="env must map str to str"):
        horovod.spark.run(rank_fns.topology, env={"A": 1})
    with pytest.raises(ValueError, match="min_num_proc <= num_proc <= max_num_proc"):
        horovod.spark.run_elastic(rank_fns.topology, num_proc=2, min_num_proc=3)
    lock = threading.Lock()
    with pytest.raises(TypeError, match="must be picklable by cloudpickle"):
        horovod.spark.run(lambda: lock, num_proc=1)
    assert not spark.sparkContext.statusTracker().getActiveJobsIds()  # none was started


def _python(code, **extra_env):
    return run([sys.executable, "-c", code], timeout=60, **extra_env)


def test_without_pyspark_import_error_says_how_to_install():
    r = _python("import sys; sys.modules['pyspark'] = None\n"
                "try:\n    import horovod.spark\nexcept ImportError as e:\n    print('ERR', e)")
    assert "ERR horovod.spark needs pyspark" in r.stdout and "pip install pyspark" in r.stdout, \
        r.stdout + r.stderr


def test_without_spark_session_says_so():
    r = _python("import horovod.spark\ntry:\n    horovod.spark.run(len, args=([],))\n"
                "except RuntimeError as e:\n    print('ERR', e)")
    assert "ERR horovod.spark.run: there is no active SparkContext" in r.stdout, \
        r.stdout + r.stderr


# ------------------------------------------------------------------ run_elastic

@timeout(150)
@pytest.mark.parametrize("how", ["rank", "task"])
def test_elastic_survives_a_killed_rank_or_task(spark, tmp_path, how):
    """how="rank": rank 1's process is SIGKILLed; its task reports the
    failure and fails, Spark retries it. how="task": rank 1's Spark task
    (its Python worker) is SIGKILLed; the rank dies with it, the driver finds
    the task lost by its heartbeat, Spark retries it. Either way the job
    goes on and the retried task joins."""
    import horovod.spark  # noqa: PLC0415
    marker = tmp_path / "killed"
    out = horovod.spark.run_elastic(rank_fns.elastic_steps, args=(str(marker), 12, how, 2),
                                    num_proc=2, min_num_proc=1, start_timeout=60,
                                    elastic_timeout=60)
    assert marker.exists(), "rank 1 never reached step 3"
    assert [o["rank"] for o in out] == [0, 1] and {o["size"] for o in out} == {2}
    sizes = out[0]["sizes"]
    assert out[1]["sizes"] == sizes and len(sizes) >= 12 and sizes[-1] == 2, sizes
    _assert_no_spark_jobs(spark)


# ------------------------------------------------------------------ upstream's usage

@timeout(240)
def test_upstream_style_script_runs_unchanged():
    """spark_scripts/upstream_torch_run.py as written for upstream Horovod,
    run by `python` with the master given as spark-submit would."""
    script = os.path.join(SCRIPTS, "upstream_torch_run.py")
    r = run([sys.executable, script, "--num-proc", "2"], timeout=220,
            PYSPARK_PYTHON=sys.executable,
            PYSPARK_SUBMIT_ARGS="--master local[2] --conf spark.ui.enabled=false "
                                "pyspark-shell")
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("LOSSES ")]
    assert r.returncode == 0 and lines, r.stdout[-3000:] + r.stderr[-6000:]
    losses = json.loads(lines[0][len("LOSSES "):])
    assert len(losses) == 2 and losses[0] == losses[1]  # averaged over ranks
    assert losses[0][-1] < 0.3 * losses[0][0], losses[0]
    assert "[0]<stdout>:epoch 0: loss" in r.stdout


# ------------------------------------------------------------------ units (no Spark job)

def test_placement_groups_ranks_by_host():
    from horovod_accel.spark.driver import placement  # noqa: PLC0415
    tasks = [{"name": f"{p}.0", "partition": p, "host_id": h, "hostname": n}
             for p, h, n in [(3, "b", "nodeB"), (0, "a", "nodeA"), (1, "b", "nodeB"),
                             (2, "a", "nodeA"), (4, "c", "nodeB")]]
    slots, task_of_rank = placement.assign(tasks)
    assert [(s.hostname, s.rank, s.local_rank, s.local_size, s.cross_rank, s.cross_size)
            for s in slots] == [("nodeA", 0, 0, 2, 0, 3), ("nodeA", 1, 1, 2, 0, 2),
                                ("nodeB", 2, 0, 2, 1, 3), ("nodeB", 3, 1, 2, 1, 2),
                                ("nodeB#2", 4, 0, 1, 2, 3)]
    assert task_of_rank == {0: "0.0", 1: "2.0", 2: "1.0", 3: "3.0", 4: "4.0"}


def test_registry_tells_lost_from_gone_tasks():
    from horovod_accel.rendezvous.server import RendezvousStoreServer  # noqa: PLC0415
    from horovod_accel.spark import protocol  # noqa: PLC0415
    from horovod_accel.spark.driver.registry import TaskRegistry  # noqa: PLC0415

    class Rank:
        def __init__(self, task):
            self.task, self.k, self.outcome = task, 0, None

        def exited(self, record):
            self.outcome = ("exited", record["returncode"])

        def lost(self, why):
            self.outcome = ("lost", why)

    now = [0.0]
    with RendezvousStoreServer("s3cret") as server:
        reg = TaskRegistry(server, lost_after=5.0, now=lambda: now[0])
        for seq, name in enumerate(["0.0", "1.0", "2.0"], 1):
            server.set_local(protocol.registration_key(seq), protocol.format_task_info(
                {"name": name, "hostname": "h", "pid": seq}))
        ranks = [Rank(n) for n in ("0.0", "1.0", "2.0")]
        for rr in ranks:
            reg.start(rr, protocol.stop_command())
        reg.poll()
        assert reg.counts() == (3, 3) and all(rr.outcome is None for rr in ranks)
        server.set_local(protocol.exit_key("0.0", 0), protocol.format_exit(3, ["x"]))
        server.set_local(protocol.gone_key("0.0"), "done")
        server.set_local(protocol.gone_key("1.0"), "ValueError: boom")
        now[0] = 4.0
        server.set_local(protocol.alive_key("2.0"), "1")  # 2.0 beats, then stops
        reg.poll()
        assert ranks[0].outcome == ("exited", 3)
        assert ranks[1].outcome[0] == "lost" and "ended (ValueError: boom)" in ranks[1].outcome[1]
        assert ranks[2].outcome is None
        now[0] = 9.5
        reg.poll()
        assert ranks[2].outcome[0] == "lost" and "no heartbeat for 5 s" in ranks[2].outcome[1]
        assert reg.counts() == (3, 0)


def test_max_task_failures_from_the_master():
    from horovod_accel.spark.driver.spark_context import max_task_failures  # noqa: PLC0415

    class Conf:
        def get(self, key, default=None):
            return default

    class Sc:
        def __init__(self, master):
            self.master = master

        def getConf(self):  # noqa: N802 - pyspark's name
            return Conf()

    assert [max_task_failures(Sc(m)) for m in
            ("local", "local[2]", "local[*, 3]", "local-cluster[2,1,1024]", "spark://h:7077")] \
        == [1, 1, 3, 4, 4]
