"""horovod.ray's RayExecutor on one local Ray instance (ray.init(num_cpus=4),
shared by the module): results in rank order at 2 and 3 workers (both
placement strategies), Horovod ops inside the actors, execute /
execute_single / run_remote with an executable, callbacks through
ray_logger, a worker that raises (the caller's error names its rank, the
job recovers), a small model trained with DistributedOptimizer, argument
errors, placement that cannot be satisfied, the rendezvous secret kept off
command lines, upstream's import paths, Ray missing, and the upstream-style
example script run unchanged. Elastic mode: test_ray_elastic.py.

Every test runs under a hard timeout (faulthandler: a hang dumps every
thread's stack and ends the run), so a stuck job never stalls the suite.
"""
import os
import sys

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (scripts/setup_ray.sh installs it)")

import horovod.ray as hvd_ray  # noqa: E402
from horovod.ray import RayExecutor  # noqa: E402
from horovod_accel.runner.run_api import RankError  # noqa: E402

from launch_util import REPO, run  # noqa: E402
from ray_scripts.support import hard_timeout, worker_runtime_env  # noqa: E402

TEST_TIMEOUT_S = 120
EXAMPLE = REPO / "examples" / "ray" / "pytorch_ray_synthetic.py"


@pytest.fixture(autouse=True)
def _deadline():
    with hard_timeout(TEST_TIMEOUT_S):
        yield


@pytest.fixture(scope="module")
def local_ray():
    with hard_timeout(TEST_TIMEOUT_S):
        ray.init(num_cpus=5, include_dashboard=False, runtime_env=worker_runtime_env())
    yield
    ray.shutdown()


class Counter:
    """An executable: state kept in each worker between execute() calls."""

    def __init__(self, start):
        self.value = start

    def add(self, n):
        self.value += n
        return self.value


@pytest.fixture(scope="module")
def executor(local_ray):
    """Two workers (PACK placement), each holding a Counter(10)."""
    with hard_timeout(TEST_TIMEOUT_S):
        ex = RayExecutor(RayExecutor.create_settings(timeout_s=30), num_workers=2)
        ex.start(executable_cls=Counter, executable_args=[10],
                 extra_env_vars={"HVDA_TEST_MARK": "set"})
    yield ex
    ex.shutdown()


# ------------------------------------------------------------- worker functions

def topology_and_ops(tag):
    """Rank identity plus allreduce / allgather / broadcast results."""
    import torch  # noqa: PLC0415
    import horovod.torch as hvd  # noqa: PLC0415
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    summed = hvd.allreduce(torch.tensor([float(r + 1)]), op=hvd.Sum, name=f"{tag}.sum")
    gathered = hvd.allgather(torch.full((r + 1,), float(r)), name=f"{tag}.gather")
    bcast = hvd.broadcast(torch.tensor([float(r) * 10 + 7]), root_rank=n - 1, name=f"{tag}.bc")
    return {"rank": r, "size": n, "local_rank": hvd.local_rank(),
            "local_size": hvd.local_size(), "cross_rank": hvd.cross_rank(),
            "cross_size": hvd.cross_size(), "sum": summed.item(),
            "gathered": gathered.tolist(), "bcast": bcast.item(), "tag": tag,
            "mark": os.environ.get("HVDA_TEST_MARK")}


def check_topology_and_ops(results, n, tag):
    assert [r["rank"] for r in results] == list(range(n))
    for r in results:
        assert r["size"] == n and r["tag"] == tag
        assert r["sum"] == n * (n + 1) / 2
        assert r["gathered"] == [float(k) for k in range(n) for _ in range(k + 1)]
        assert r["bcast"] == (n - 1) * 10 + 7
    # One node: every rank is local, ranks count up on it.
    assert [(r["local_rank"], r["local_size"], r["cross_rank"], r["cross_size"])
            for r in results] == [(k, n, 0, 1) for k in range(n)]


def raise_on_rank_1():
    import torch  # noqa: PLC0415
    import horovod.torch as hvd  # noqa: PLC0415
    hvd.init()
    if hvd.rank() == 1:
        raise ValueError("bad value on rank 1")
    hvd.allreduce(torch.ones(1), name="never_completes")  # rank 1 never submits it
    return hvd.rank()


def train_regression(steps):
    """A linear model on per-rank data with DistributedOptimizer; returns
    (losses, flattened parameters)."""
    import torch  # noqa: PLC0415
    import horovod.torch as hvd  # noqa: PLC0415
    hvd.init()
    torch.set_num_threads(1)
    torch.manual_seed(100 + hvd.rank())  # ranks start apart; the broadcast aligns them
    true_w = torch.tensor([[2.0], [-3.0], [0.5]])
    g = torch.Generator().manual_seed(hvd.rank())
    x = torch.randn(64, 3, generator=g)
    y = x @ true_w + 1.0
    model = torch.nn.Linear(3, 1)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    params = torch.cat([p.detach().flatten() for p in model.parameters()]).tolist()
    return losses, params


# ------------------------------------------------------------- static jobs

def test_run_returns_results_in_rank_order_with_ops_at_2(executor):
    check_topology_and_ops(executor.run(topology_and_ops, args=["two"]), 2, "two")


def test_run_at_3_workers_spread_placement(local_ray):
    ex = RayExecutor(RayExecutor.create_settings(timeout_s=30), num_hosts=1,
                     num_workers_per_host=3)
    ex.start()
    try:
        results = ex.run(topology_and_ops, kwargs={"tag": "three"})
    finally:
        ex.shutdown()
    check_topology_and_ops(results, 3, "three")
    assert all(r["mark"] is None for r in results)  # extra_env_vars of another job


def test_extra_env_vars_reach_the_workers(executor):
    assert [r["mark"] for r in executor.run(topology_and_ops, args=["env"])] == ["set", "set"]


def test_execute_and_execute_single_use_the_executable(executor):
    assert executor.execute(lambda c: c.value) == [10, 10]
    assert executor.execute_single(lambda c: c.add(5)) == 15   # rank 0 only
    assert executor.execute(lambda c: c.add(1)) == [16, 11]


def test_run_remote_returns_object_refs_in_rank_order(executor):
    refs = executor.run_remote(lambda x: (int(os.environ["HOROVOD_RANK"]), x), args=[3])
    assert all(isinstance(r, ray.ObjectRef) for r in refs)
    assert ray.get(refs) == [(0, 3), (1, 3)]


def test_callbacks_receive_what_workers_log(executor):
    seen = []

    def log_rank():
        from horovod.ray import ray_logger  # noqa: PLC0415
        ray_logger.log({"rank": int(os.environ["HOROVOD_RANK"])})
        return True

    assert executor.run(log_rank, callbacks=[seen.append]) == [True, True]
    assert sorted(d["rank"] for d in seen) == [0, 1]


def test_worker_exception_names_its_rank_and_the_job_recovers(executor):
    formed = executor.adapter.formations
    with pytest.raises(RankError) as info:
        executor.run(raise_on_rank_1)
    err = info.value
    assert err.rank == 1 and err.exc_type == "ValueError"
    assert str(err).startswith("horovod.ray: rank 1 (node ")
    assert "raised ValueError: bad value on rank 1" in str(err)
    assert "Traceback on rank 1" in str(err) and "raise_on_rank_1" in str(err)
    assert isinstance(err.exception, ValueError)
    # The failed call ended the job; the next call re-forms it (new actors,
    # new executables) and runs normally.
    check_topology_and_ops(executor.run(topology_and_ops, args=["after"]), 2, "after")
    assert executor.adapter.formations == formed + 1
    assert executor.execute(lambda c: c.value) == [10, 10]


def test_dead_actor_is_named_and_the_job_reformed(executor):
    ray.kill(executor.adapter.workers[1])
    with pytest.raises(RankError, match=r"rank 1 \(node .*\) its actor died") as info:
        executor.run(topology_and_ops, args=["dead"])
    assert info.value.rank == 1 and isinstance(info.value.__cause__, ray.exceptions.RayActorError)
    check_topology_and_ops(executor.run(topology_and_ops, args=["reformed"]), 2, "reformed")


def test_training_converges_with_equal_parameters(executor):
    (loss0, params0), (loss1, params1) = executor.run(train_regression, args=[40])
    for losses in (loss0, loss1):
        assert losses[-1] < 0.1 * losses[0], losses
    assert params0 == params1


def test_secret_never_on_a_command_line(executor):
    secret = executor.execute_single(lambda _: os.environ["_HOROVOD_SECRET_KEY"])
    assert len(secret) == 64
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    assert secret.encode() not in f.read(), f"process {pid} shows the secret"
            except OSError:
                pass  # ended meanwhile


def test_detect_nics_probes_the_workers(executor):
    from horovod.ray.utils import detect_nics, nics_to_env_var  # noqa: PLC0415
    settings = RayExecutor.create_settings()
    assert detect_nics(settings, ["localhost", "127.0.0.1"]) == ["lo"]
    # A host that is not this machine: each node worker names its interface.
    found = detect_nics(settings, ["192.0.2.250"], node_workers=executor.adapter.workers[:1])
    assert found == [executor.execute_single(lambda _: hvd_ray.utils.node_interface())]
    assert detect_nics(RayExecutor.create_settings(nics=["eth7", "eth8"]), ["192.0.2.250"]) == \
        ["eth7", "eth8"]
    assert nics_to_env_var(["eth7", "eth8"]) == {"HOROVOD_GLOO_IFACE": "eth7",
                                                 "NCCL_SOCKET_IFNAME": "eth7,eth8"}


def test_unsatisfiable_placement_times_out_and_frees_resources(executor):
    # 2 of the 5 CPUs are held by `executor`; 4 more workers do not fit.
    free_before = ray.available_resources().get("CPU", 0)
    ex = RayExecutor(RayExecutor.create_settings(placement_group_timeout_s=2), num_workers=4)
    with pytest.raises(TimeoutError, match="could not reserve"):
        ex.start()
    ex.shutdown()
    assert ray.available_resources().get("CPU", 0) == free_before


def test_calls_before_start_are_refused(local_ray):
    ex = RayExecutor(RayExecutor.create_settings(), num_workers=1)
    with pytest.raises(RuntimeError, match="start"):
        ex.run(lambda: 1)


@pytest.mark.parametrize("kwargs, match", [
    (dict(num_workers=2, num_hosts=1), "not both"),
    (dict(num_workers=2, min_workers=1), "both min_workers and num_workers"),
    (dict(max_workers=4), "max_workers is given without a positive min_workers"),
    (dict(), "give num_workers"),
    (dict(num_workers=0), "num_workers must be a positive integer"),
    (dict(num_workers=1, gpus_per_worker=1), "use_gpu is False"),
    (dict(min_workers=3, max_workers=2), "smaller than min_workers"),
    (dict(min_workers=1, num_hosts=2), "num_hosts does not apply"),
    (dict(min_workers=1, cooldown_range=(5, 2)), "cooldown_range"),
])
def test_wrong_argument_combinations_raise_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RayExecutor(RayExecutor.create_settings(), **kwargs)


# ------------------------------------------------------------- pure helpers

def test_coordinator_topology_of_interleaved_ranks():
    from horovod.ray.runner import Coordinator  # noqa: PLC0415 - upstream's import path
    coord = Coordinator(RayExecutor.create_settings())
    assert coord.world_size == 0 and coord.node_id_string == ""
    for rank in range(12):  # rank r on node r % 3, as Ray Train may register them
        coord.register(f"host{rank % 3}", node_id=str(rank % 3), world_rank=rank)
    info = coord.finalize_registration()
    assert coord.world_size == 12 and coord.node_id_string == "0:4,1:4,2:4"
    for rank in range(12):
        assert (info[rank]["HOROVOD_LOCAL_SIZE"], info[rank]["HOROVOD_CROSS_SIZE"]) == (4, 3)
        assert info[rank]["HOROVOD_LOCAL_RANK"] == rank // 3    # rank order within a node
        assert info[rank]["HOROVOD_CROSS_RANK"] == rank % 3     # node order within a local rank


def test_coordinator_serves_the_store_with_a_secret(local_ray):
    from horovod_accel.rendezvous.client import StoreAuthError, StoreClient  # noqa: PLC0415
    coord = hvd_ray.executor.Coordinator(RayExecutor.create_settings(timeout_s=7))
    here = ray.util.get_node_ip_address()
    coord.register("h", "node-a", 0, node_ip=here)
    coord.register("h", "node-a", 1, node_ip=here)
    coord.finalize_registration()
    env = coord.establish_rendezvous()
    try:
        assert env["HOROVOD_GLOO_RENDEZVOUS_ADDR"] == "127.0.0.1"  # every rank on this machine
        assert env["HOROVOD_START_TIMEOUT"] == "7" and env["HOROVOD_CONTROLLER"] == "gloo"
        rank1 = coord.rank_env(1)
        assert (rank1["HOROVOD_RANK"], rank1["HOROVOD_LOCAL_RANK"], rank1["HOROVOD_HOSTNAME"]) == \
            ("1", "1", "node-a")
        port = int(env["HOROVOD_GLOO_RENDEZVOUS_PORT"])
        with StoreClient("127.0.0.1", port, env["_HOROVOD_SECRET_KEY"], timeout=5) as store:
            store.set("k", b"v")
        with pytest.raises(StoreAuthError):
            StoreClient("127.0.0.1", port, "wrong", timeout=5)
    finally:
        coord.close()


def test_upstream_import_paths():
    import horovod.ray.runner  # noqa: PLC0415
    import horovod.ray.utils  # noqa: PLC0415
    import horovod_accel.ray  # noqa: PLC0415
    assert hvd_ray is horovod_accel.ray
    assert set(hvd_ray.__all__) == {"RayExecutor", "BaseHorovodWorker", "ElasticRayExecutor"}
    assert horovod.ray.runner.Coordinator and horovod.ray.runner.MiniSettings
    assert callable(horovod.ray.utils.detect_nics) and callable(horovod.ray.utils.nics_to_env_var)
    from horovod.ray.elastic import ElasticRayExecutor, RayHostDiscovery  # noqa: PLC0415
    from horovod.ray import ray_logger  # noqa: PLC0415
    assert ElasticRayExecutor is hvd_ray.ElasticRayExecutor
    assert callable(RayHostDiscovery(cpus_per_worker=2).find_available_hosts_and_slots)
    assert callable(ray_logger.log)


def test_missing_ray_is_an_import_error_that_says_how_to_install():
    code = "import sys; sys.modules['ray'] = None\nimport horovod.ray"
    r = run([sys.executable, "-c", code], timeout=60)
    assert r.returncode != 0
    assert "ImportError: horovod.ray needs Ray" in r.stderr and "pip install" in r.stderr


# ------------------------------------------------------------- upstream-style script

def test_upstream_style_example_runs_unchanged(executor):
    # The script's own ray.init() joins this module's Ray through RAY_ADDRESS;
    # it needs 2 of the 3 CPUs `executor` leaves free.
    address = ray.get_runtime_context().gcs_address
    r = run([sys.executable, str(EXAMPLE), "--epochs", "3"], timeout=TEST_TIMEOUT_S - 10,
            RAY_ADDRESS=address)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "loss fell on every rank" in r.stdout
    assert "parameters equal on every rank" in r.stdout
