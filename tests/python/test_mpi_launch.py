"""Jobs started by mpirun instead of horovodrun (issue 8): Open MPI
(Debian's mpirun.openmpi) and MPICH (mpirun.mpich), directly and in the
seeds' form `mpirun ... bash run.sh`, at np 2, 3 and 4; a training run whose
ranks end with equal parameters; mpi4py sub-communicators; the wrong MPI
library; a rank killed under mpirun. Every job has a hard timeout.
"""
import re
import shutil
import sys

import pytest

from launch_util import REPO, horovodrun_script, run

SCRIPTS = REPO / "tests" / "python" / "mpi_scripts"
_MPIRUN = {"openmpi": "mpirun.openmpi", "mpich": "mpirun.mpich"}


def mpirun(flavour):
    exe = shutil.which(_MPIRUN[flavour])
    if exe is None:
        pytest.skip(f"{_MPIRUN[flavour]} is not installed (scripts/setup.sh installs "
                    f"openmpi-bin and mpich)")
    from horovod_accel.common import mpi  # noqa: PLC0415
    if flavour not in mpi.built_flavours():
        pytest.fail(f"{_MPIRUN[flavour]} is installed but horovod_accel has no {flavour} shim: "
                    f"its headers were missing at build time")
    if flavour == "openmpi":  # tests run as root in CI; np may exceed the cores
        return [exe, "--allow-run-as-root", "--oversubscribe"]
    return [exe]


def run_sh(tmp_path, *args):
    """The seeds' launch: mpirun runs bash run.sh, which sets the environment
    and starts the training script."""
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\nexport OMP_NUM_THREADS=1\n"
                      f"exec {sys.executable} {' '.join(str(a) for a in args)}\n")
    return ["bash", str(script)]


def ok_lines(r, n, word="rank"):
    """The ranks' "<word> K ok ..." reports, one per rank 0..n-1 (found
    anywhere: mpirun may interleave the ranks' output)."""
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    reports = re.findall(rf"{word} (\d+) ok ([^\n]*?)(?={word} \d+ ok|\n|$)", r.stdout)
    assert sorted(int(k) for k, _ in reports) == list(range(n)), out[-6000:]
    return [rest for _, rest in reports]


@pytest.mark.parametrize("flavour", ["openmpi", "mpich"])
@pytest.mark.parametrize("np_", [2, 3, 4])
def test_mpirun_bash_run_sh_forms_the_job(flavour, np_, tmp_path):
    cmd = mpirun(flavour) + ["-np", str(np_)] + run_sh(tmp_path, SCRIPTS / "mpi_job.py")
    lines = ok_lines(run(cmd, timeout=180), np_)
    assert all(f"size {np_}" in line for line in lines), lines
    # Both Debian builds offer MPI_THREAD_MULTIPLE, which init asks for.
    assert all("threads True" in line for line in lines), lines


@pytest.mark.parametrize("flavour", ["openmpi", "mpich"])
def test_seed_launch_form_trains_with_equal_parameters(flavour, tmp_path):
    # The horovod_gcu guide's form: mpirun -np N --allow-run-as-root --bind-to numa bash run.sh
    bind = ["--bind-to", "numa"] if flavour == "openmpi" else ["-bind-to", "numa"]
    cmd = mpirun(flavour) + ["-np", "2"] + bind + run_sh(tmp_path, SCRIPTS / "mpi_job.py",
                                                         "--train")
    lines = ok_lines(run(cmd, timeout=240), 2)
    assert all("parameters agree" in line for line in lines), lines


def test_direct_python_under_mpirun_trains_at_np3():
    cmd = mpirun("openmpi") + ["-np", "3", sys.executable, SCRIPTS / "mpi_job.py", "--train"]
    ok_lines(run(cmd, timeout=240), 3)


def test_mpi4py_sub_communicators_run_independent_jobs():
    try:
        from mpi4py import MPI  # noqa: PLC0415
    except ImportError:
        pytest.skip("mpi4py is not installed (scripts/setup.sh installs it)")
    if "Open MPI" not in MPI.Get_library_version():
        pytest.skip("mpi4py is not built against Open MPI, the MPI of this test")
    cmd = mpirun("openmpi") + ["-np", "4", sys.executable, SCRIPTS / "subcomm_job.py"]
    ok_lines(run(cmd, timeout=180), 4, word="world")


@pytest.mark.parametrize("flavour", ["openmpi", "mpich"])
def test_init_with_a_list_of_ranks(flavour):
    """Upstream's init(comm=[ranks]) under mpirun: the listed MPI ranks form
    a job (two jobs of 2 at np 4); a rank not in its list is a ValueError."""
    cmd = mpirun(flavour) + ["-np", "4", sys.executable, SCRIPTS / "rank_list_job.py"]
    lines = ok_lines(run(cmd, timeout=180), 4, word="world")
    assert sorted(lines) == ["sub 0/2 sum 2", "sub 0/2 sum 4", "sub 1/2 sum 2",
                             "sub 1/2 sum 4"], lines


def test_library_of_another_mpi_is_a_clear_error(tmp_path):
    # MPICH's launcher, Open MPI's library: MPI would see a size-1 job.
    cmd = mpirun("mpich") + ["-np", "2"] + run_sh(tmp_path, SCRIPTS / "mpi_job.py")
    mpirun("openmpi")  # skips unless both are here
    r = run(cmd, timeout=120, HOROVOD_MPI_FLAVOUR="openmpi")
    out = r.stdout + r.stderr
    assert r.returncode != 0, out[-4000:]
    assert "cannot form the job from MPI" in out and "PMI_SIZE=2" in out, out[-4000:]
    assert "is not the launcher's" in out, out[-4000:]


@pytest.mark.parametrize("flavour", ["openmpi", "mpich"])
def test_rank_killed_under_mpirun_ends_the_job(flavour, tmp_path):
    cmd = mpirun(flavour) + ["-np", "3"] + run_sh(tmp_path, SCRIPTS / "mpi_job.py", "--train",
                                                  "--die-at", "5")
    r = run(cmd, timeout=120, HOROVOD_START_TIMEOUT=30)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out[-4000:]
    assert r.elapsed < 90, f"took {r.elapsed:.0f} s to end"
    assert "ok size" not in r.stdout, out[-4000:]
    # Open MPI: "... process rank 1 ... exited on signal 9"; MPICH: "BAD TERMINATION".
    assert "signal 9" in out or "KILLED BY SIGNAL: 9" in out or "BAD TERMINATION" in out, \
        out[-4000:]


def test_horovodrun_mpi_launches_through_mpirun(tmp_path):
    mpirun("openmpi")
    if "Open MPI" not in run(["mpirun", "--version"], timeout=30).stdout:
        pytest.skip("the mpirun on PATH is not Open MPI's, the MPI of this test")
    r = run([sys.executable, "-m", "horovod_accel.runner.launch", "--mpi", "-np", "3",
             "--mpi-args=--oversubscribe", "--cycle-time-ms", "2", sys.executable,
             SCRIPTS / "mpi_job.py", "--expect-env", "HOROVOD_CYCLE_TIME=2.0"], timeout=180)
    ok_lines(r, 3)


# ---------------------------------------------------------------------------
# MPI as the CPU data plane and controller (HOROVOD_CPU_OPERATIONS=mpi,
# HOROVOD_CONTROLLER=mpi; docs/design/mpi.md).

_CONFORMANCE_FINAL = re.compile(r"^conformance: (\d+) passed, (\d+) failed$", re.M)


def _mpi_env_args(flavour, **env):
    """Variables for the ranks: Open MPI forwards only what -x names; Hydra
    passes the whole environment (run() sets env for both)."""
    if flavour != "openmpi":
        return []
    return [a for k in env for a in ("-x", k)]


@pytest.mark.parametrize("flavour", ["openmpi", "mpich"])
@pytest.mark.parametrize("np_", [2, 3])
def test_conformance_over_mpi_data_plane_and_controller(flavour, np_, tmp_path):
    timeline = tmp_path / "timeline.json"
    env = {"HOROVOD_CPU_OPERATIONS": "mpi,gloo", "HOROVOD_CONTROLLER": "mpi",
           "HOROVOD_LOG_LEVEL": "debug", "HOROVOD_TIMELINE": str(timeline)}
    cmd = (mpirun(flavour) + _mpi_env_args(flavour, **env) + ["-np", str(np_), sys.executable,
           "-m", "horovod_accel.conformance", "--device", "cpu", "--quick"])
    r = run(cmd, timeout=240, **env)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    # Under mpirun the ranks' output is not prefixed; only rank 0 prints the summary.
    finals = _CONFORMANCE_FINAL.findall(r.stdout)
    assert len(finals) == 1, out[-6000:]
    passed, failed = map(int, finals[0])
    assert failed == 0 and passed > 0, out[-6000:]
    announced = re.search(r"^conformance: device .*; (\d+) cases \(", r.stdout, re.M)
    assert announced and int(announced.group(1)) == passed, out[-6000:]
    # Every rank built the global set on mpi (then gloo) and negotiates over MPI.
    made = re.findall(r"rank (\d+)\] process set 0: CPU backends mpi, gloo; negotiation over mpi",
                      r.stderr)
    assert sorted(map(int, made)) == list(range(np_)), out[-6000:]
    # Rank 0's timeline names the backend that ran each op: MPI ran every
    # kind of op, Gloo only the reductions MPI has no type for (fp16, bf16).
    activities = set(re.findall(r'"([A-Z]+)_([A-Z]+)"', timeline.read_text()))
    for kind in ("ALLREDUCE", "ALLGATHER", "BCAST", "ALLTOALL", "REDUCESCATTER"):
        assert ("MPI", kind) in activities, sorted(activities)
    assert {b for b, _ in activities} <= {"MPI", "GLOO", "NEGOTIATE"}, sorted(activities)


def test_mpi_operations_under_horovodrun_is_a_clear_error():
    r = horovodrun_script(2, SCRIPTS / "mpi_job.py", timeout=120, HOROVOD_CPU_OPERATIONS="gloo,mpi")
    out = r.stdout + r.stderr
    assert r.returncode != 0, out[-4000:]
    assert "HOROVOD_CPU_OPERATIONS=mpi needs a job started by mpirun" in out, out[-4000:]


def test_mpi_controller_without_mpirun_is_a_clear_error():
    # horovodrun sets HOROVOD_CONTROLLER=gloo for its ranks (as upstream's
    # Gloo launcher does); a process started by hand gets the core's check.
    r = run([sys.executable, "-c", "import horovod.torch as hvd; hvd.init()"], timeout=60,
            HOROVOD_CONTROLLER="mpi")
    out = r.stdout + r.stderr
    assert r.returncode != 0, out[-4000:]
    assert "HOROVOD_CONTROLLER=mpi needs a job started by mpirun" in out, out[-4000:]
