"""horovodrun's elastic mode through the real launcher, on one machine: two
host names ("localhost" and "127.0.0.1", both this machine, as upstream's
integration tests do), a discovery script that prints ELASTIC_DIR/hosts.txt
and workers (elastic_scripts/scheduled_worker.py) that fail, change the host
list or sleep at scheduled (epoch, batch) points. Each test checks what every
batch ran with (round, rank, size, host) from the workers' logs, and the
driver's verdict. Every job has a hard timeout.
"""
import json
import sys
from pathlib import Path

import pytest

from launch_util import horovodrun, run, tail

WORKER = Path(__file__).resolve().parent / "elastic_scripts" / "scheduled_worker.py"
HARD_TIMEOUT = 120


class Job:
    def __init__(self, result, logdir):
        self.r = result
        self.dir = logdir
        self.records = []
        for f in sorted(logdir.glob("w*.jsonl")):
            for line in f.read_text().splitlines():
                rec = json.loads(line)
                if "batch" in rec and "event" not in rec:
                    self.records.append(rec)

    def sizes_per_step(self):
        """{(epoch, batch): sorted set of sizes it last ran with}: a step
        retried after a failure counts with its last size."""
        last = {}
        for rec in self.records:
            key = (rec["epoch"], rec["batch"])
            if rec["round"] >= last.get(key, (0, None))[0]:
                last[key] = (rec["round"], rec["size"])
        return {k: v[1] for k, v in sorted(last.items())}

    def rounds(self):
        """{round: (size, {worker: (rank, host)})}."""
        out = {}
        for rec in self.records:
            size, who = out.setdefault(rec["round"], (rec["size"], {}))
            assert rec["size"] == size, rec
            who[rec["w"]] = (rec["rank"], rec["host"])
        return out

    def check_sums(self):
        bad = [r for r in self.records if r["sum"] != r["size"]]
        assert not bad, bad[:5]


def run_elastic(tmp_path, hosts, schedule, *flags, discovery=True, timeout=HARD_TIMEOUT, env=None):
    logdir = tmp_path / "elastic"
    logdir.mkdir()
    (logdir / "hosts.txt").write_text(hosts.strip() + "\n")
    script = logdir / "discover.sh"
    script.write_text(f"#!/bin/sh\ncat {logdir / 'hosts.txt'}\n")
    script.chmod(0o755)
    args = [*map(str, flags)]
    if discovery:
        args += ["--host-discovery-script", str(script)]
    r = horovodrun([*args, "--verbose", sys.executable, WORKER], timeout,
                   ELASTIC_DIR=logdir, ELASTIC_SCHEDULE=json.dumps(schedule), **(env or {}))
    return Job(r, logdir)


def test_hosts_added_then_removed(tmp_path):
    """1 worker; a host with 2 slots joins (3 workers, state synced to the
    newcomers), then the first host leaves (2 workers, no sync needed)."""
    sched = {"epochs": 2, "batches": 4, "events": [
        {"epoch": 0, "batch": 2, "do": "hosts", "hosts": "localhost:1\n127.0.0.1:2"},
        {"epoch": 1, "batch": 1, "do": "hosts", "hosts": "127.0.0.1:2"}]}
    job = run_elastic(tmp_path, "localhost:1", sched, "-np", 1, "--min-np", 1)
    assert job.r.returncode == 0, tail(job.r)
    job.check_sums()
    sizes = job.sizes_per_step()
    assert [sizes[(0, b)] for b in range(4)] == [1, 1, 3, 3], sizes
    assert [sizes[(1, b)] for b in range(4)] == [3, 2, 2, 2], sizes
    rounds = job.rounds()
    assert sorted(rounds) == [1, 2, 3], rounds
    r2 = rounds[2][1]
    # The survivor keeps rank 0 on the first host; the newcomers follow.
    assert r2["w1"] == (0, "localhost") and sorted(r2.values())[1:] == [(1, "127.0.0.1"),
                                                                      (2, "127.0.0.1")], r2
    r3 = rounds[3][1]
    assert "w1" not in r3 and sorted(v[1] for v in r3.values()) == ["127.0.0.1"] * 2, r3
    assert "was removed from the elastic job" in job.r.stderr, tail(job.r)
    assert "DONE size=2" in job.r.stdout, tail(job.r)


def test_elastic_sampler_commits_every_sample_once_per_epoch(tmp_path):
    """TorchState + ElasticSampler through a scale-up (2 -> 3 workers) in
    epoch 0 and a SIGKILL (3 -> 2) in epoch 1, both mid-epoch, with uneven
    shards (50 samples over 3): over all workers and rounds, each epoch
    commits every sample exactly once (upstream horovod#3399 / #3143)."""
    n = 50
    sched = {"epochs": 2, "events": [
        {"epoch": 0, "batch": 3, "do": "hosts", "hosts": "localhost:2\n127.0.0.1:1"},
        {"epoch": 1, "batch": 2, "rank": 2, "do": "sigkill"}]}
    logdir = tmp_path / "elastic"
    logdir.mkdir()
    (logdir / "hosts.txt").write_text("localhost:2\n")
    script = logdir / "discover.sh"
    script.write_text(f"#!/bin/sh\ncat {logdir / 'hosts.txt'}\n")
    script.chmod(0o755)
    r = horovodrun(["-np", 2, "--min-np", 1, "--host-discovery-script", script, sys.executable,
                    WORKER.parent / "sampler_worker.py"], HARD_TIMEOUT, ELASTIC_DIR=logdir,
                   ELASTIC_SCHEDULE=json.dumps(sched), SAMPLER_DATASET=n, SAMPLER_BATCH=4)
    assert r.returncode == 0 and "DONE size=2" in r.stdout, tail(r)
    committed = {0: [], 1: []}
    sizes = {0: set(), 1: set()}
    for f in logdir.glob("w*.jsonl"):
        for line in f.read_text().splitlines():
            rec = json.loads(line)
            if "committed" in rec:
                committed[rec["epoch"]] += rec["committed"]
                sizes[rec["epoch"]].add(rec["size"])
    assert sizes == {0: {2, 3}, 1: {2, 3}}, sizes  # both changes landed mid-epoch
    for epoch, indices in committed.items():
        assert sorted(indices) == list(range(n)), (epoch, sorted(indices))


def test_sigkilled_rank_job_continues_on_the_other_host(tmp_path):
    sched = {"epochs": 1, "batches": 6, "sleep": 0.02, "events": [
        {"epoch": 0, "batch": 3, "rank": 2, "do": "sigkill"}]}
    job = run_elastic(tmp_path, "localhost:2\n127.0.0.1:1", sched, "-np", 3, "--min-np", 1)
    assert job.r.returncode == 0, tail(job.r)
    job.check_sums()
    sizes = job.sizes_per_step()
    assert list(sizes.values()) == [3, 3, 3, 2, 2, 2], sizes
    rounds = job.rounds()
    assert sorted(v[1] for v in rounds[2][1].values()) == ["localhost"] * 2, rounds
    assert "failed with signal SIGKILL; host 127.0.0.1 is blacklisted" in job.r.stderr, tail(job.r)


@pytest.mark.parametrize("how", ["raise", "sigkill"])
def test_rank0_fails_job_continues_without_its_host(tmp_path, how):
    """Rank 0 itself fails (an exception, or SIGKILL): the survivors on the
    other host hold the committed state; one of them becomes rank 0."""
    sched = {"epochs": 1, "batches": 5, "events": [
        {"epoch": 0, "batch": 2, "rank": 0, "do": how}]}
    job = run_elastic(tmp_path, "127.0.0.1:1\nlocalhost:2", sched, "-np", 3, "--min-np", 2)
    assert job.r.returncode == 0, tail(job.r)
    job.check_sums()
    assert list(job.sizes_per_step().values()) == [3, 3, 2, 2, 2]
    r2 = job.rounds()[2][1]
    assert sorted(r2.values()) == [(0, "localhost"), (1, "localhost")], r2
    cause = "scheduled failure 0 on rank 0" if how == "raise" else "failed with signal SIGKILL"
    assert cause in job.r.stderr, tail(job.r)


def test_fixed_hosts_fault_tolerance_with_gloo_data_plane(tmp_path):
    """-H without a discovery script; the data plane forced to Gloo, and the
    kill lands while the survivor is in an allreduce: the Gloo I/O error is a
    HorovodInternalError the loop recovers from (upstream horovod#2484)."""
    sched = {"epochs": 1, "batches": 5, "events": [
        {"epoch": 0, "batch": 2, "rank": 1, "do": "sigkill"}]}
    job = run_elastic(tmp_path, "", sched, "-np", 2, "--min-np", 1, "-H", "localhost:1,127.0.0.1:1",
                      discovery=False, env={"HOROVOD_CPU_OPERATIONS": "gloo"})
    assert job.r.returncode == 0, tail(job.r)
    job.check_sums()
    assert list(job.sizes_per_step().values()) == [2, 2, 1, 1, 1]


def test_deadlock_resets_and_the_batch_runs_again(tmp_path):
    """A collective only rank 1 submits: deadlock detection fails every
    rank's op and ends the generation (a HorovodInternalError), so
    hvd.elastic.run restores the last commit and the same two workers run
    the batch again in the next round."""
    sched = {"epochs": 1, "batches": 4, "events": [
        {"epoch": 0, "batch": 2, "rank": 1, "do": "deadlock"}]}
    job = run_elastic(tmp_path, "localhost:1\n127.0.0.1:1", sched, "-np", 2, "--min-np", 2,
                      env={"HOROVOD_DEADLOCK_TIMEOUT_SECONDS": "1"})
    assert job.r.returncode == 0, tail(job.r)
    job.check_sums()
    assert list(job.sizes_per_step().values()) == [2, 2, 2, 2]
    rounds = job.rounds()
    assert len(rounds) == 2 and all(size == 2 for size, _ in rounds.values()), rounds
    assert "Deadlock detected" in job.r.stdout + job.r.stderr, tail(job.r)


def test_every_rank_fails(tmp_path):
    sched = {"epochs": 1, "batches": 4, "events": [
        {"epoch": 0, "batch": 1, "rank": 0, "do": "exit"},
        {"epoch": 0, "batch": 1, "rank": 1, "do": "exit"}]}
    job = run_elastic(tmp_path, "localhost:1\n127.0.0.1:1", sched, "-np", 2, "--min-np", 1)
    assert job.r.returncode != 0, tail(job.r)
    assert "elastic job failed" in job.r.stderr, tail(job.r)
    assert ("every worker of round 1 failed" in job.r.stderr
            or "every host is blacklisted" in job.r.stderr), tail(job.r)


def test_every_host_blacklisted(tmp_path):
    """One host: a failure blacklists it, so its surviving worker has nowhere to run."""
    sched = {"epochs": 1, "batches": 4, "events": [
        {"epoch": 0, "batch": 1, "rank": 1, "do": "sigkill"}]}
    job = run_elastic(tmp_path, "localhost:2", sched, "-np", 2, "--min-np", 1)
    assert job.r.returncode != 0, tail(job.r)
    assert "every host is blacklisted after failures (localhost)" in job.r.stderr, tail(job.r)


def test_too_few_slots_past_elastic_timeout(tmp_path):
    sched = {"epochs": 1, "batches": 4, "events": [
        {"epoch": 0, "batch": 1, "rank": 1, "do": "sigkill"}]}
    job = run_elastic(tmp_path, "localhost:1\n127.0.0.1:1", sched, "-np", 2, "--min-np", 2,
                      "--elastic-timeout", 2)
    assert job.r.returncode != 0, tail(job.r)
    assert "only 1 slots are available" in job.r.stderr and "fewer than --min-np 2" in \
        job.r.stderr, tail(job.r)


@pytest.mark.parametrize("limit,ok", [(1, False), (2, True)])
def test_reset_limit(tmp_path, limit, ok):
    """Two resets (a host joins, then a worker fails): --reset-limit 1 stops
    the job at the second, --reset-limit 2 lets it finish."""
    sched = {"epochs": 1, "batches": 6, "events": [
        {"epoch": 0, "batch": 1, "do": "hosts", "hosts": "localhost:1\n127.0.0.1:1"},
        {"epoch": 0, "batch": 3, "rank": 1, "do": "sigkill"}]}
    job = run_elastic(tmp_path, "localhost:1", sched, "-np", 1, "--min-np", 1,
                      "--reset-limit", limit)
    if ok:
        assert job.r.returncode == 0, tail(job.r)
        assert sorted(job.rounds()) == [1, 2, 3]
    else:
        assert job.r.returncode != 0, tail(job.r)
        assert "number of resets during elastic job exceeded limit: 1" in job.r.stderr, tail(job.r)


def test_blacklisted_host_returns_after_cooldown(tmp_path):
    """The failed host comes back after its cooldown as a new host: new
    workers (new ids), never its old processes."""
    sched = {"epochs": 1, "batches": 8, "events": [
        {"epoch": 0, "batch": 2, "rank": 1, "do": "sigkill"},
        {"epoch": 0, "batch": 5, "do": "await_size", "size": 2}]}
    job = run_elastic(tmp_path, "localhost:1\n127.0.0.1:1", sched, "-np", 2, "--min-np", 1,
                      "--blacklist-cooldown-range", 1, 1)
    assert job.r.returncode == 0, tail(job.r)
    job.check_sums()
    rounds = job.rounds()
    assert len(rounds) == 3, rounds
    assert rounds[2][0] == 1 and rounds[3][0] == 2, rounds
    back = {w for w, (_, host) in rounds[3][1].items() if host == "127.0.0.1"}
    original = {w for w, (_, host) in rounds[1][1].items() if host == "127.0.0.1"}
    assert back and not back & original, rounds


@pytest.mark.parametrize("flags,message", [
    (["--min-np", 3, "-np", 2, "-H", "localhost:4"], "--min-np 3 is larger than -np 2"),
    (["-np", 2, "--max-np", 1, "--min-np", 1, "-H", "localhost:4"],
     "--max-np 1 is smaller than -np 2"),
    (["-np", 2, "--max-np", 3], "--max-np only applies to elastic jobs"),
    (["-np", 1, "--min-np", 1], "elastic mode needs hosts"),
])
def test_flag_errors(tmp_path, flags, message):
    r = horovodrun([*map(str, flags), sys.executable, "-c", "pass"], 30)
    assert r.returncode == 2 and message in r.stderr, tail(r)


def test_discovery_script_errors(tmp_path):
    """A script that fails on its first call, or prints hosts without slots
    and no --slots-per-host, is a clear error."""
    bad = tmp_path / "bad.sh"
    bad.write_text("#!/bin/sh\necho oops >&2\nexit 3\n")
    bad.chmod(0o755)
    r = horovodrun(["-np", 1, "--host-discovery-script", bad, sys.executable, "-c", "pass"], 30)
    assert r.returncode != 0 and "exited with code 3: oops" in r.stderr, tail(r)
    noslots = tmp_path / "noslots.sh"
    noslots.write_text("#!/bin/sh\necho localhost\n")
    noslots.chmod(0o755)
    r = horovodrun(["-np", 1, "--host-discovery-script", noslots, sys.executable, "-c", "pass"], 30)
    assert r.returncode != 0 and "without a slot count" in r.stderr, tail(r)


def test_elastic_mnist_example_survives_a_lost_host(tmp_path):
    """examples/elastic/pytorch_mnist_elastic.py loses its second host in epoch
    2 and still reaches the accuracy bar of the static example (0.9)."""
    example = WORKER.parents[3] / "examples" / "elastic" / "pytorch_mnist_elastic.py"
    r = horovodrun(["-np", 2, "--min-np", 1, "-H", "localhost:1,127.0.0.1:1", sys.executable,
                    example, "--fail-at", "2:5", "--fail-marker-dir", tmp_path], HARD_TIMEOUT)
    assert r.returncode == 0, tail(r)
    assert "epoch 1: 2 workers" in r.stdout and "epoch 2: 1 workers" in r.stdout, tail(r)
    assert "final: 1 workers, test accuracy" in r.stdout, tail(r)


def test_emulated_gcu_communicators_are_recreated_after_a_loss(tmp_path):
    """The data on the GCU plugin (emulated TOPS runtime + ECCL, the test-only
    torch 'gcu' device): a worker is SIGKILLed, the survivors' communicator of
    the old round is dropped and the next round's is created."""
    logdir = tmp_path / "elastic"
    logdir.mkdir()
    sched = {"epochs": 1, "batches": 5, "events": [
        {"epoch": 0, "batch": 2, "rank": 2, "do": "sigkill"}]}
    cmd = ["bash", WORKER.parents[3] / "scripts" / "emulated_gcu.sh", sys.executable, "-m",
           "horovod_accel.runner.launch", "-np", 3, "--min-np", 1, "-H",
           "localhost:2,127.0.0.1:1", sys.executable, WORKER]
    r = run(cmd, 600, ELASTIC_DIR=logdir, ELASTIC_SCHEDULE=json.dumps(sched),
            ELASTIC_DEVICE="gcu")
    job = Job(r, logdir)
    assert r.returncode == 0, tail(r)
    job.check_sums()
    assert {rec["device"] for rec in job.records} == {"gcu"}, job.records[:3]
    assert list(job.sizes_per_step().values()) == [3, 3, 2, 2, 2]


@pytest.mark.parametrize("mode", ["tape", "fit"])
def test_tensorflow_and_keras_survive_a_lost_worker(tmp_path, mode):
    """TF2 (TensorFlowKerasState, a DistributedGradientTape step traced once)
    and Keras 3 (KerasState, model.fit with the elastic callbacks): the
    worker on 127.0.0.1 is SIGKILLed in epoch 1; the job finishes every epoch
    on the survivor, each epoch logged once by the round that completed it,
    and the loss falls."""
    sched = {"epochs": 4, "events": [{"epoch": 1, "batch": 2, "rank": 1, "do": "sigkill"}]}
    logdir = tmp_path / "elastic"
    logdir.mkdir()
    r = horovodrun(["-np", 2, "--min-np", 1, "-H", "localhost:1,127.0.0.1:1", sys.executable,
                    WORKER.parent / "tf2_worker.py", mode], HARD_TIMEOUT, ELASTIC_DIR=logdir,
                   ELASTIC_SCHEDULE=json.dumps(sched))
    assert r.returncode == 0 and "DONE size=1" in r.stdout, tail(r)
    epochs = {}
    for f in logdir.glob("w*.jsonl"):
        for line in f.read_text().splitlines():
            rec = json.loads(line)
            if "loss" in rec and rec["round"] >= epochs.get(rec["epoch"], {"round": 0})["round"]:
                epochs[rec["epoch"]] = rec
    assert sorted(epochs) == [0, 1, 2, 3], epochs
    assert [epochs[e]["size"] for e in range(4)] == [2, 1, 1, 1], epochs
    assert epochs[3]["loss"] < epochs[0]["loss"], epochs


def test_process_set_of_an_ended_job_says_to_register_again():
    """Process sets live for one init(); after a reset (shutdown(); init())
    using an old one says how to register it again."""
    code = ("import torch, horovod.torch as hvd\n"
            "hvd.init(process_sets='dynamic'); ps = hvd.add_process_set([0])\n"
            "hvd.shutdown(); hvd.init(process_sets='dynamic')\n"
            "try:\n    hvd.allreduce(torch.ones(1), process_set=ps)\n"
            "except ValueError as e:\n    print('ERROR', e)\n")
    r = run([sys.executable, "-c", code], 60)
    assert "register it again after init(), e.g. in a reset callback" in r.stdout, tail(r)
