"""horovod.ray's elastic mode (RayExecutor(min_workers=...)) on a real
multi-node Ray cluster on this machine (ray.cluster_utils.Cluster: three
nodes of 1 CPU each, shared by the module): a worker actor killed with
ray.kill mid-training is replaced on the free node and training completes
with hvd.elastic.run + TorchState; a job whose every worker fails raises a
RuntimeError naming the failure; upstream's deprecated ElasticRayExecutor
runs. Every test runs under a hard timeout (ray_scripts/support.py).
"""
import os
import threading

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (scripts/setup_ray.sh installs it)")

from ray.cluster_utils import Cluster  # noqa: E402
from ray.util.queue import Queue  # noqa: E402

from horovod.ray import ElasticRayExecutor, RayExecutor  # noqa: E402
from ray_scripts.support import hard_timeout, worker_runtime_env  # noqa: E402

TEST_TIMEOUT_S = 150


@pytest.fixture(autouse=True)
def _deadline():
    with hard_timeout(TEST_TIMEOUT_S):
        yield


@pytest.fixture(scope="module")
def cluster():
    """Three Ray nodes of one CPU each: one worker slot per node."""
    with hard_timeout(TEST_TIMEOUT_S):
        c = Cluster(initialize_head=True,
                    head_node_args={"num_cpus": 1, "include_dashboard": False})
        nodes = [c.head_node, c.add_node(num_cpus=1), c.add_node(num_cpus=1)]
        ray.init(address=c.address, runtime_env=worker_runtime_env())
        c.wait_for_nodes()
    yield [n.node_id for n in nodes]
    ray.shutdown()
    c.shutdown()


def train_until_killed(handles, steps):
    """Elastic training of a linear model. The round-1 worker with rank 1
    hands its own actor handle to the test at step 3 and waits there, so the
    test kills it mid-training (its peer blocks in the step's allreduce)."""
    import torch  # noqa: PLC0415
    import horovod.torch as hvd  # noqa: PLC0415
    hvd.init()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05),
                                   named_parameters=model.named_parameters())
    state = hvd.elastic.TorchState(model=model, optimizer=opt, step=0, sizes=[], losses=[])
    first_round = os.environ.get("_HOROVOD_ELASTIC_SPAWN_ROUND") == "1"
    w = torch.tensor([[1.0], [-2.0], [0.5], [3.0]])

    @hvd.elastic.run
    def loop(state):
        while state.step < steps:
            if state.step == 3 and hvd.rank() == 1 and first_round:
                handles.put(ray.get_runtime_context().current_actor)
                threading.Event().wait()  # until the test kills this actor
            g = torch.Generator().manual_seed(state.step * 10 + hvd.rank())
            x = torch.randn(16, 4, generator=g)
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), x @ w)
            loss.backward()
            opt.step()
            state.losses.append(loss.item())
            state.sizes.append(hvd.size())
            state.step += 1
            state.commit()
        params = torch.cat([p.detach().flatten() for p in model.parameters()]).tolist()
        return {"rank": hvd.rank(), "size": hvd.size(), "step": state.step,
                "sizes": state.sizes, "losses": state.losses, "params": params,
                "node": ray.get_runtime_context().get_node_id()}

    return loop(state)


def test_killed_worker_is_replaced_and_training_completes(cluster):
    handles = Queue(actor_options={"num_cpus": 0})
    killed = []

    def kill_when_asked():
        actor = handles.get(timeout=TEST_TIMEOUT_S)
        killed.append(actor)
        ray.kill(actor)

    threading.Thread(target=kill_when_asked, daemon=True).start()
    ex = RayExecutor(RayExecutor.create_settings(timeout_s=30), min_workers=1, max_workers=2,
                     cpus_per_worker=1)
    ex.start()
    try:
        results = ex.run(train_until_killed, args=[handles, 8])
        driver = ex.adapter.driver
    finally:
        ex.shutdown()
    assert killed, "the worker never asked to be killed"
    assert [r["rank"] for r in results] == [0, 1]
    for r in results:
        assert r["size"] == 2 and r["step"] == 8
        assert r["sizes"] == [2] * 8          # the replacement kept the job at 2 workers
        assert r["losses"][-1] < r["losses"][0]
    assert results[0]["params"] == results[1]["params"]
    # Round 1: w1 and w2 on two nodes; w2 was killed, its node blacklisted,
    # and round 2 put a new worker, w3, on the third node.
    assert driver.round == 2 and sorted(driver.workers) == ["w1", "w2", "w3"]
    w1, w2, w3 = (driver.workers[k] for k in ("w1", "w2", "w3"))
    assert driver.failures == [w2]
    assert len({w1.hostname, w2.hostname, w3.hostname}) == 3
    assert {w1.hostname, w2.hostname, w3.hostname} == set(cluster)
    assert [r["node"] for r in results] == [w1.hostname, w3.hostname]
    handles.shutdown()


def always_raises():
    import horovod.torch as hvd  # noqa: PLC0415
    hvd.init()
    raise ValueError(f"bad data on rank {hvd.rank()}")


def test_every_worker_failing_fails_the_job_naming_the_cause(cluster):
    ex = RayExecutor(RayExecutor.create_settings(timeout_s=30), min_workers=2, max_workers=2)
    ex.start()
    try:
        with pytest.raises(RuntimeError) as info:
            ex.run(always_raises)
    finally:
        ex.shutdown()
    text = str(info.value)
    assert "every worker of round 1 failed" in text
    assert "ValueError: bad data on rank" in text
    assert isinstance(info.value.__cause__, ray.exceptions.RayTaskError)


def test_elastic_mode_refuses_fixed_rank_calls(cluster):
    ex = RayExecutor(RayExecutor.create_settings(), min_workers=1)
    ex.start()
    with pytest.raises(NotImplementedError, match="run_remote"):
        ex.run_remote(lambda: 1)
    with pytest.raises(NotImplementedError, match="execute_single"):
        ex.execute_single(lambda _: 1)
    ex.shutdown()


def sizes():
    import horovod.torch as hvd  # noqa: PLC0415
    hvd.init()
    return hvd.rank(), hvd.size()


def test_deprecated_elastic_ray_executor_runs(cluster):
    settings = ElasticRayExecutor.create_settings(min_num_proc=2, max_num_proc=2)
    with pytest.warns(DeprecationWarning, match="RayExecutor"):
        ex = ElasticRayExecutor(settings, cpus_per_slot=1)
    ex.start()
    assert ex.run(sizes) == [(0, 2), (1, 2)]
