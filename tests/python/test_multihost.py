"""Jobs over several hosts, for real: network namespaces on this machine act
as hosts (tests/multihost/netns_hosts.py: own addresses on a private bridge,
own host names, own /dev/shm), and a stand-in `ssh` enters them. Covered:
horovodrun -H by address and by host name, uneven layouts over 3 hosts,
training, Open MPI and MPICH across hosts, a rank killed on a remote host,
and an elastic job that loses a host. Every job runs under a hard timeout; the tests skip with the reason
where namespaces cannot be made (not root, no iproute2).
"""
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from launch_util import REPO, job_env

sys.path.insert(0, str(REPO / "tests" / "multihost"))
import netns_hosts  # noqa: E402

JOB = REPO / "tests" / "python" / "multihost_scripts" / "host_job.py"
_REASON = netns_hosts.unavailable_reason()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=f"no namespace hosts: {_REASON}")


def run_on(hosts, argv, timeout, **extra_env):
    """Runs argv on the first namespace host with the stand-in ssh on PATH;
    fails the test (with the output so far) past the timeout."""
    t0 = time.monotonic()
    try:
        r = subprocess.run(hosts.hosts[0].command(argv, cwd=str(REPO)),
                           env=hosts.env(job_env(**extra_env)),
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(map(str, argv))} did not finish within {timeout} s\n"
                    f"{e.stdout}\n{e.stderr}")
    r.elapsed = time.monotonic() - t0
    return r


def horovodrun(hosts, host_list, *job_args, timeout=240, **extra_env):
    n = sum(int(h.rsplit(":", 1)[1]) for h in host_list.split(","))
    return run_on(hosts, [sys.executable, "-m", "horovod_accel.runner.launch", "-H", host_list,
                          "-np", str(n), sys.executable, JOB, "--hosts", len(hosts.hosts),
                          *job_args], timeout, **extra_env)


def reports(r, n):
    """The ranks' "rank K ok host H local L/LS cross C/CS ..." lines as
    {rank: (host, local, cross)}; asserts all n ranks reported and rc 0."""
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    found = re.findall(r"rank (\d+) ok host (\w+) local (\d+/\d+) cross (\d+/\d+)", r.stdout)
    assert sorted(int(k) for k, *_ in found) == list(range(n)), out[-6000:]
    return {int(k): (h, lo, cr) for k, h, lo, cr in found}


@pytest.mark.parametrize("hierarchical", ["default", "0", "1"])
def test_horovodrun_two_hosts_by_address(hierarchical):
    """Allreduce and allgather over 2 hosts x 2 ranks, in two levels (shm per
    host, Gloo between hosts: the default) and flat (Gloo among all 4)."""
    env = {} if hierarchical == "default" else {"HOROVOD_HIERARCHICAL_ALLREDUCE": hierarchical,
                                                "HOROVOD_HIERARCHICAL_ALLGATHER": hierarchical}
    with netns_hosts.NetnsHosts(2) as hs:  # host names resolve nowhere
        a, b = hs.hosts
        r = horovodrun(hs, f"{a.addr}:2,{b.addr}:2", **env)
        got = reports(r, 4)
    assert got == {0: ("hostA", "0/2", "0/2"), 1: ("hostA", "1/2", "0/2"),
                   2: ("hostB", "0/2", "1/2"), 3: ("hostB", "1/2", "1/2")}, got
    # The backend that served the global set (shm steps aside: it spans hosts).
    want = "gloo" if hierarchical == "0" else "hierarchical"
    assert re.findall(r"backends (\S+) ", r.stdout) == [want] * 4, r.stdout[-3000:]


def test_horovodrun_two_hosts_by_name_trains():
    with netns_hosts.NetnsHosts(2, resolvable_names=True) as hs:
        r = horovodrun(hs, "hostA:2,hostB:1", "--train")
        got = reports(r, 3)
    assert [got[k][0] for k in range(3)] == ["hostA", "hostA", "hostB"], got
    assert "parameters agree" in r.stdout


def test_horovodrun_three_hosts_uneven():
    with netns_hosts.NetnsHosts(3) as hs:
        a, b, c = hs.hosts
        got = reports(horovodrun(hs, f"{a.addr}:1,{b.addr}:2,{c.addr}:1"), 4)
    assert got == {0: ("hostA", "0/1", "0/3"), 1: ("hostB", "0/2", "1/3"),
                   2: ("hostB", "1/2", "0/1"), 3: ("hostC", "0/1", "2/3")}, got


@pytest.mark.parametrize("per_host", [1, 2])
def test_remote_rank_killed_ends_the_job_clearly(per_host):
    """The last rank (on hostB; with 2 per host, not its host's root) is
    SIGKILLed mid-training: the job ends non-zero, soon, naming it."""
    with netns_hosts.NetnsHosts(2) as hs:
        a, b = hs.hosts
        r = horovodrun(hs, f"{a.addr}:{per_host},{b.addr}:{per_host}", "--train", "--die-at", "5",
                       timeout=120)
    out = r.stdout + r.stderr
    last = 2 * per_host - 1
    assert r.returncode != 0, out[-4000:]
    assert re.search(rf"rank {last} \(host {re.escape(b.addr)}\) failed with signal SIGKILL|"
                     rf"rank {last} on {re.escape(b.addr)} failed", out), out[-4000:]
    assert r.elapsed < 60, f"took {r.elapsed:.0f} s to end"


def _mpirun(flavour, hs, host_list, n):
    exe = shutil.which({"openmpi": "mpirun.openmpi", "mpich": "mpirun.mpich"}[flavour])
    if exe is None:
        pytest.skip(f"{flavour}'s mpirun is not installed (scripts/setup.sh installs it)")
    if flavour == "openmpi":  # the stand-in ssh starts orted on the other host
        return [exe, "--allow-run-as-root", "--oversubscribe", "--mca", "plm_rsh_agent", hs.ssh,
                "-x", "PYTHONPATH", "-x", "OMP_NUM_THREADS", "-H", host_list, "-np", str(n)]
    return [exe, "-launcher", "ssh", "-launcher-exec", hs.ssh, "-genvlist",
            "PYTHONPATH,OMP_NUM_THREADS", "-hosts", host_list, "-np", str(n)]


def test_mpirun_round_robin_hosts():
    """Open MPI's --map-by node puts ranks 0, 2 on hostA and 1, 3 on hostB:
    local/cross ranks follow, and the two-level allgather reorders blocks
    into rank order."""
    with netns_hosts.NetnsHosts(2) as hs:
        a, b = hs.hosts
        cmd = _mpirun("openmpi", hs, f"{a.addr}:2,{b.addr}:2", 4) + ["--map-by", "node"]
        got = reports(run_on(hs, cmd + [sys.executable, JOB, "--hosts", 2], 240), 4)
    assert got == {0: ("hostA", "0/2", "0/2"), 1: ("hostB", "0/2", "1/2"),
                   2: ("hostA", "1/2", "0/2"), 3: ("hostB", "1/2", "1/2")}, got


@pytest.mark.parametrize("flavour", ["openmpi", "mpich"])
def test_mpirun_across_hosts(flavour, tmp_path):
    """The seeds' form, `mpirun ... bash run.sh`, over two hosts: the job is
    formed from MPI with host-aware local and cross ranks, and trains."""
    script = tmp_path / "run.sh"
    script.write_text(f"#!/bin/bash\nexec {sys.executable} {JOB} --hosts 2 --train\n")
    with netns_hosts.NetnsHosts(2) as hs:
        a, b = hs.hosts
        r = run_on(hs, _mpirun(flavour, hs, f"{a.addr}:2,{b.addr}:2", 4) + ["bash", script], 240)
        got = reports(r, 4)
    assert got == {0: ("hostA", "0/2", "0/2"), 1: ("hostA", "1/2", "0/2"),
                   2: ("hostB", "0/2", "1/2"), 3: ("hostB", "1/2", "1/2")}, got


def test_mpirun_across_hosts_over_mpi_data_plane_and_controller():
    """Open MPI across 2 hosts x 2 ranks with HOROVOD_CPU_OPERATIONS=shm,mpi
    (plus gloo for the bfloat16 reductions of host_job.py, which MPI has no
    type for) and HOROVOD_CONTROLLER=mpi: the global set spans hosts, so shm
    steps aside and MPI runs its collectives and its negotiation; every
    rank's debug line says so."""
    env = {"HOROVOD_CPU_OPERATIONS": "shm,mpi,gloo", "HOROVOD_CONTROLLER": "mpi",
           "HOROVOD_LOG_LEVEL": "debug"}
    with netns_hosts.NetnsHosts(2) as hs:
        a, b = hs.hosts
        cmd = (_mpirun("openmpi", hs, f"{a.addr}:2,{b.addr}:2", 4)
               + [arg for k in env for arg in ("-x", k)] + [sys.executable, JOB, "--hosts", 2])
        r = run_on(hs, cmd, 240, **env)
        got = reports(r, 4)
    assert got == {0: ("hostA", "0/2", "0/2"), 1: ("hostA", "1/2", "0/2"),
                   2: ("hostB", "0/2", "1/2"), 3: ("hostB", "1/2", "1/2")}, got
    made = re.findall(r"rank (\d+)\] process set 0: CPU backends mpi, hierarchical; "
                      r"negotiation over mpi",
                      r.stderr)
    assert sorted(map(int, made)) == [0, 1, 2, 3], (r.stdout + r.stderr)[-6000:]


def test_elastic_job_survives_a_lost_host():
    """Elastic mode across three namespace hosts (Gloo between them, workers
    started through the stand-in ssh): the worker on hostC SIGKILLs itself
    mid-training; hostC is blacklisted and the job goes on with the workers
    of hostA and hostB, which see the loss as a recoverable error."""
    import json  # noqa: PLC0415
    import tempfile  # noqa: PLC0415
    worker = REPO / "tests" / "python" / "elastic_scripts" / "scheduled_worker.py"
    sched = {"epochs": 1, "batches": 6, "events": [
        {"epoch": 0, "batch": 3, "rank": 2, "do": "sigkill"}]}
    with tempfile.TemporaryDirectory() as logdir, netns_hosts.NetnsHosts(3) as hs:
        a, b, c = hs.hosts
        r = run_on(hs, [sys.executable, "-m", "horovod_accel.runner.launch", "-np", "3",
                        "--min-np", "2", "-H", f"{a.addr}:1,{b.addr}:1,{c.addr}:1",
                        sys.executable, worker], 180, ELASTIC_DIR=logdir,
                   ELASTIC_SCHEDULE=json.dumps(sched))
        records = [json.loads(line) for f in sorted(os.listdir(logdir)) if f.endswith(".jsonl")
                   for line in open(os.path.join(logdir, f)) if '"sum"' in line]
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "DONE size=2" in r.stdout, out[-6000:]
    assert f"host {c.addr} is blacklisted" in out, out[-6000:]
    assert all(rec["sum"] == rec["size"] for rec in records), records
    after = {(rec["host"], rec["size"]) for rec in records if rec["round"] == 2}
    assert after == {(a.addr, 2), (b.addr, 2)}, records
