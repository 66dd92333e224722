"""Per-rank compute threads (horovod_accel/common/compute_threads.py): the
share rule, the user's choice first, and how it reaches each rank, through
horovodrun (the rank's environment), mpirun and plain python (hvd.init()).
Every job runs with a hard timeout."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import launch_util
from horovod_accel.common import compute_threads as ct
from horovod_accel.common.compute_threads import Cpus

SCRIPT = Path(__file__).resolve().parent / "thread_scripts" / "thread_report.py"
TIMEOUT = 120


# ---------------------------------------------------------------- the rule

@pytest.mark.parametrize("cpus, local_size, expected", [
    (Cpus(affinity=2, allowed=2), 2, 1),           # this VM, horovodrun -np 2
    (Cpus(affinity=2, allowed=2), 1, 2),
    (Cpus(affinity=2, allowed=2), 3, 1),           # oversubscribed: never 0
    (Cpus(affinity=16, allowed=16), 3, 5),         # odd split rounds down
    (Cpus(affinity=1, allowed=2), 2, 1),           # mpirun --bind-to core
    (Cpus(affinity=1, allowed=16), 4, 1),
    (Cpus(affinity=8, allowed=16), 4, 4),          # --bind-to socket, 2 sockets, 2 ranks each
    (Cpus(affinity=8, allowed=16), 2, 8),          # one rank per socket
    (Cpus(affinity=16, allowed=16, quota=4.0), 2, 2),   # container CPU limit
    (Cpus(affinity=16, allowed=16, quota=0.5), 2, 1),
])
def test_cpu_share(cpus, local_size, expected):
    assert ct.cpu_share(cpus, local_size) == expected


def test_decide_auto_fills_every_variable():
    d = ct.decide({}, 2, Cpus(affinity=8, allowed=8))
    assert d.threads == 4
    assert d.env == {v: "4" for v in ct.THREAD_VARIABLES}
    assert "4 compute threads per rank" in d.why and "8 CPUs" in d.why


@pytest.mark.parametrize("variable", ct.THREAD_VARIABLES)
def test_any_variable_of_the_user_wins(variable):
    def no_read():
        raise AssertionError("the CPUs are not read when the user chose")
    d = ct.decide({variable: "3"}, 2, no_read)
    assert d.threads is None and d.env == {}
    assert f"{variable}=3" in d.why


def test_setting_count_and_off():
    cpus = Cpus(affinity=2, allowed=2)
    d = ct.decide({ct.SETTING: "3"}, 2, cpus)
    assert d.threads == 3 and d.env["OMP_NUM_THREADS"] == "3"
    for off in ("off", "OFF", "0", "none"):
        assert ct.decide({ct.SETTING: off}, 2, cpus).threads is None
    assert ct.decide({ct.SETTING: " Auto "}, 2, cpus).threads == 1


@pytest.mark.parametrize("bad", ["-1", "two", "1.5", "auto2"])
def test_bad_setting_says_what_to_use(bad):
    with pytest.raises(ValueError, match="'auto'.*positive integer.*'off'"):
        ct.decide({ct.SETTING: bad}, 2, Cpus(affinity=2, allowed=2))


def test_launcher_values_are_not_the_users():
    """Variables horovodrun set are recomputed (an elastic job's local size
    can change between rounds), and all of them are rewritten."""
    env = {v: "4" for v in ct.THREAD_VARIABLES}
    env[ct.LAUNCHER_MARK] = "4"
    d = ct.decide(env, 4, Cpus(affinity=8, allowed=8))
    assert d.threads == 2 and d.env == {v: "2" for v in ct.THREAD_VARIABLES}


def test_cpu_list_parsing():
    assert ct._parse_cpu_list("0-3,8,10-11\n") == 7
    assert ct._parse_cpu_list("5") == 1
    assert ct._parse_cpu_list("") is None
    assert ct._parse_cpu_list("x-y") is None


def test_read_cpus_sees_this_process():
    cpus = ct.read_cpus()
    assert cpus.affinity == len(os.sched_getaffinity(0))
    assert cpus.allowed >= cpus.affinity
    assert cpus.quota is None or cpus.quota > 0


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2 or shutil.which("taskset") is None,
                    reason="needs taskset and 2 CPUs")
def test_read_cpus_sees_a_binding():
    code = "from horovod_accel.common import compute_threads as c; print(c.read_cpus().affinity, c.read_cpus().allowed)"
    cpu = sorted(os.sched_getaffinity(0))[0]
    out = subprocess.run(["taskset", "-c", str(cpu), sys.executable, "-c", code],
                         env=launch_util.job_env(), capture_output=True, text=True, timeout=60,
                         check=True).stdout.split()
    assert int(out[0]) == 1 and int(out[1]) >= 2


# ---------------------------------------------------------------- jobs

def _env(**extra):
    """A job's environment without any thread variable (a fresh user's)."""
    env = launch_util.job_env()
    for v in ct.THREAD_VARIABLES + (ct.LAUNCHER_MARK,):
        env.pop(v, None)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def _run(cmd, env):
    """Runs a job of thread_report.py; returns (the ranks' reports in rank
    order, the job's stderr)."""
    with tempfile.TemporaryDirectory() as out:
        try:
            r = subprocess.run([str(c) for c in cmd], env=dict(env, THREAD_REPORT_DIR=out),
                               capture_output=True, text=True, timeout=TIMEOUT,
                               cwd=str(launch_util.REPO))
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"{cmd} did not finish within {TIMEOUT} s: {e.stdout}\n{e.stderr}")
        assert r.returncode == 0, r.stdout + r.stderr
        reports = [json.loads(p.read_text()) for p in Path(out).glob("*.json")]
    return sorted(reports, key=lambda x: x["rank"]), r.stderr


def _horovodrun(np_, *flags, framework="torch", **extra):
    return _run([sys.executable, "-m", "horovod_accel.runner.launch", "-np", np_, *flags,
                 sys.executable, SCRIPT, framework], _env(**extra))


@pytest.mark.parametrize("np_", [1, 2, 3])
def test_horovodrun_gives_each_rank_its_share(np_):
    reports, err = _horovodrun(np_, HOROVOD_LOG_LEVEL="INFO")
    share = ct.cpu_share(ct.read_cpus(), np_)
    assert len(reports) == np_
    for r in reports:
        assert r["at_start"] == {v: str(share) for v in ct.THREAD_VARIABLES}, r
        assert r["pools"]["torch"] <= share
    # Rank 0 says so once, at INFO, with how to change it.
    lines = [l for l in err.splitlines() if "compute threads:" in l]
    assert len(lines) == 1 and "rank 0]" in lines[0], err
    assert "horovodrun gave the rank" in lines[0] and "--threads-per-rank" in lines[0]


def test_info_line_is_silent_at_the_default_log_level():
    _, err = _horovodrun(2)
    assert "compute threads" not in err


def test_users_variable_wins_under_horovodrun():
    reports, err = _horovodrun(2, OMP_NUM_THREADS=2, HOROVOD_LOG_LEVEL="INFO")
    for r in reports:
        assert r["at_start"]["OMP_NUM_THREADS"] == "2"
        assert r["at_start"]["TF_NUM_INTRAOP_THREADS"] is None
        assert r["after_init"] == r["at_start"]
    assert "the user's OMP_NUM_THREADS=2" in err


def test_flag_sets_the_count_and_off_leaves_defaults():
    reports, _ = _horovodrun(2, "--threads-per-rank", 3)
    assert all(r["at_start"]["MKL_NUM_THREADS"] == "3" for r in reports)
    reports, _ = _horovodrun(2, "--threads-per-rank", "off")
    assert all(r["at_start"] == {v: None for v in ct.THREAD_VARIABLES} for r in reports)
    assert all(r["after_init"] == r["at_start"] for r in reports)


def test_bad_values_fail_before_any_rank_starts():
    cmd = [sys.executable, "-m", "horovod_accel.runner.launch", "-np", "2"]
    r = subprocess.run(cmd + ["--threads-per-rank", "many", sys.executable, SCRIPT],
                       env=_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 2 and "--threads-per-rank: 'many' is not" in r.stderr
    r = subprocess.run(cmd + [sys.executable, SCRIPT], env=_env(HOROVOD_THREADS_PER_RANK="-2"),
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 2 and "HOROVOD_THREADS_PER_RANK='-2' is not a thread count" in r.stderr
    assert "[0]" not in r.stdout + r.stderr  # no rank ran


def test_plain_python_applies_it_at_init():
    """No launcher set anything: hvd.init() fills the variables and sizes
    torch's pool (a single rank gets all of its CPUs)."""
    reports, err = _run([sys.executable, SCRIPT], _env(HOROVOD_LOG_LEVEL="INFO"))
    share = ct.cpu_share(ct.read_cpus(), 1)
    (r,) = reports
    assert r["at_start"]["OMP_NUM_THREADS"] is None
    assert r["after_init"] == {v: str(share) for v in ct.THREAD_VARIABLES}
    assert r["pools"]["torch"] <= share
    assert "from hvd.init(), and applied to torch" in err


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs mpirun (Open MPI or MPICH)")
@pytest.mark.parametrize("np_", [2, 3])
def test_mpirun_ranks_size_their_pools_at_init(np_):
    from horovod_accel.common import mpi
    if not mpi.built_flavours():
        pytest.skip("no MPI shim built")
    argv = ["mpirun", "-np", np_]
    if "Open MPI" in subprocess.run(["mpirun", "--version"], capture_output=True,
                                    text=True).stdout:
        argv += ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    reports, _ = _run(argv + [sys.executable, SCRIPT], _env())
    assert len(reports) == np_
    for r in reports:
        # Whatever binding mpirun chose, no rank runs more than its share.
        assert r["at_start"]["OMP_NUM_THREADS"] is None
        n = int(r["after_init"]["OMP_NUM_THREADS"])
        assert 1 <= n <= max(1, len(os.sched_getaffinity(0)) // np_)
        assert r["pools"]["torch"] <= n



def test_tensorflow_pools_follow_at_init():
    pytest.importorskip("tensorflow")
    reports, err = _run([sys.executable, SCRIPT, "tensorflow"], _env(HOROVOD_LOG_LEVEL="INFO"))
    share = ct.cpu_share(ct.read_cpus(), 1)
    assert reports[0]["pools"] == {"intra": share, "inter": share}
    assert "applied to tensorflow" in err


def test_tensorflow_started_before_init_is_a_clear_warning():
    pytest.importorskip("tensorflow")
    reports, err = _run([sys.executable, SCRIPT, "tensorflow-late"], _env())
    assert reports[0]["pools"] == {"intra": 0, "inter": 0}
    assert "TensorFlow's runtime started before hvd.init()" in err
    assert "TF_NUM_INTRAOP_THREADS" in err


def test_tensorflow_started_early_under_horovodrun_needs_no_warning():
    """horovodrun's variables were read when TensorFlow started, so a pool
    that cannot be resized any more already has the count."""
    pytest.importorskip("tensorflow")
    reports, err = _horovodrun(2, framework="tensorflow-late")
    assert len(reports) == 2
    assert "started before hvd.init()" not in err
