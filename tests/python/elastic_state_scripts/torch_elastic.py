"""horovod.torch.elastic under a static 2-rank horovodrun job (every rank
runs this; test_elastic_states.py launches it once).

Checks: TorchState/ObjectState save, restore and sync; the sampler's commit
exchange and sync union through real collectives; hvd.elastic.run with a
HostsUpdatedInterrupt raised on every rank at the same batch (reset =
shutdown(); init() of the same static job, reset callbacks once, rank 1's
deliberately different state replaced by rank 0's, every sample of the
epoch recorded exactly once across ranks); a HorovodInternalError outside
an elastic job re-raised, not retried; horovod.keras.elastic.KerasState on
KERAS_BACKEND=torch.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ["KERAS_BACKEND"] = "torch"  # for the horovod.keras check (no TensorFlow)

import torch  # noqa: E402

import horovod.torch as hvd  # noqa: E402
from horovod.common.exceptions import HorovodInternalError, HostsUpdatedInterrupt  # noqa: E402
from _checks import check, run_all  # noqa: E402


def make_model(seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    return model, torch.optim.Adam(model.parameters(), lr=0.01)


def step(model, optimizer, x):
    optimizer.zero_grad()
    model(x).pow(2).sum().backward()
    optimizer.step()


def flat(model, optimizer):
    """Every parameter, buffer and optimizer tensor as one float vector."""
    parts = [t.detach().double().flatten() for t in model.state_dict().values()]
    for s in optimizer.state_dict()["state"].values():
        parts += [v.detach().double().flatten() for v in s.values() if torch.is_tensor(v)]
    return torch.cat(parts)


def same_everywhere(value, what):
    values = hvd.allgather_object(value)
    assert all(v == values[0] for v in values), f"{what} differs across ranks: {values}"


@check
def object_state_save_restore_sync():
    state = hvd.elastic.ObjectState(epoch=0, batch=0, tag=f"rank{hvd.rank()}")
    state.epoch, state.batch = 3, 7
    state.save()
    state.epoch, state.batch = 100, 100
    state.restore()
    assert (state.epoch, state.batch) == (3, 7), (state.epoch, state.batch)
    state.sync()  # rank 0's saved attributes everywhere
    assert state.tag == "rank0", state.tag
    same_everywhere((state.epoch, state.batch, state.tag), "ObjectState after sync")


@check
def torch_state_save_restore_sync():
    model, optimizer = make_model(seed=hvd.rank())  # different on every rank
    state = hvd.elastic.TorchState(model, optimizer, epoch=hvd.rank())
    assert state.model is model and state.optimizer is optimizer and state.epoch == hvd.rank()
    state.sync()
    same_everywhere(flat(model, optimizer).tolist(), "model/optimizer after sync")
    assert state.epoch == 0
    step(model, optimizer, torch.randn(5, 4))
    state.commit()
    saved = flat(model, optimizer).clone()
    step(model, optimizer, torch.randn(5, 4))
    state.epoch = 9
    assert not torch.equal(flat(model, optimizer), saved)
    state.restore()  # back to the commit, locally
    assert torch.equal(flat(model, optimizer), saved) and state.epoch == 0
    # reassigning a handled attribute tracks (and saves) the new value
    other, _ = make_model(seed=42)
    state.model = other
    assert state._handlers["model"].value is other
    registry = hvd.elastic.get_handler_registry()
    assert [t for t, _ in registry] == [torch.nn.Module, torch.optim.Optimizer,
                                        hvd.elastic.ElasticSampler], registry


@check
def sampler_commit_exchange_and_sync():
    sampler = hvd.elastic.ElasticSampler(list(range(11)), shuffle=True, seed=5)
    state = hvd.elastic.TorchState(sampler=sampler)
    mine = sampler.get_indices(0, 2)
    sampler.record_batch(0, 2)
    state.commit()  # every rank now knows both ranks' first batch
    both = hvd.allgather_object(mine)
    assert sampler.processed_indices == set(both[0]) | set(both[1]), sampler.processed_indices
    sampler.record_batch(1, 2)  # uncommitted: lost by restore, merged by sync
    state.restore()
    assert sampler.processed_indices == set(both[0]) | set(both[1])
    sampler.record_batch(1, 2)  # of the shard resharded by restore()
    union = set().union(*hvd.allgather_object(sampler.processed_indices))
    assert len(union) > 4, union
    state.sync()
    assert sampler.processed_indices == union, (sampler.processed_indices, union)
    assert len(sampler) == (11 - len(union) + 1) // 2


@check
def run_resets_after_hosts_updated_interrupt():
    n_batches, batch_size = 6, 3
    dataset = list(range(2 * n_batches * batch_size - 1))  # odd: one rank gets padding
    model, optimizer = make_model(seed=hvd.rank())
    sampler = hvd.elastic.ElasticSampler(dataset, seed=1)
    state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, epoch=0, batch=0)
    resets, calls, done = [], [], []
    state.register_reset_callbacks([lambda: resets.append((hvd.size(), len(calls)))])

    @hvd.elastic.run
    def train(state, tag):
        calls.append(tag)
        if len(calls) == 2:
            # synced from rank 0 after the reset
            same_everywhere(flat(state.model, state.optimizer).tolist(), "model after reset")
            same_everywhere((state.epoch, state.batch), "objects after reset")
            assert (state.epoch, state.batch) == (0, 2), (state.epoch, state.batch)
        loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size,
                                             sampler=state.sampler)
        for i, batch in enumerate(loader):
            step(state.model, state.optimizer, batch.float().reshape(-1, 1).expand(-1, 4))
            done.extend(state.sampler.get_indices(i, batch_size)[:len(batch)])
            state.sampler.record_batch(i, batch_size)
            state.batch += 1
            state.commit()
            if len(calls) == 1 and i == 1:
                if hvd.rank() == 1:  # diverge, uncommitted: the sync must undo it
                    with torch.no_grad():
                        for p in state.model.parameters():
                            p.add_(5.0)
                    state.epoch, state.batch = 77, 77
                raise HostsUpdatedInterrupt(skip_sync=False)
        return "finished"

    assert train(state, "t") == "finished"
    assert calls == ["t", "t"], calls
    assert resets == [(2, 1)], resets  # once, before the second call
    processed = hvd.allgather_object(sorted(state.sampler.processed_indices))
    assert processed[0] == processed[1] == dataset, processed
    # padding excluded: every dataset index recorded exactly once in total
    recorded = [i for part in hvd.allgather_object(sorted(_own_records(state.sampler, done)))
                for i in part]
    assert sorted(recorded) == dataset, recorded


def _own_records(sampler, done):
    """What this rank recorded this epoch: its processed yields minus padding."""
    return [i for i in done if i in sampler.processed_indices and i not in sampler._padding]


@check
def internal_error_outside_elastic_job_is_raised():
    calls = []

    @hvd.elastic.run
    def fail(state):
        calls.append(1)
        raise HorovodInternalError("simulated collective failure")

    try:
        fail(hvd.elastic.ObjectState(x=1))
    except HorovodInternalError as e:
        assert "simulated" in str(e)
    else:
        raise AssertionError("HorovodInternalError was not raised")
    assert calls == [1], calls
    hvd.allreduce(torch.ones(1), name="still.works")


@check
def keras_torch_backend_state():
    import keras
    import numpy as np

    import horovod.keras as hvd_keras
    assert keras.backend.backend() == "torch"
    keras.utils.set_random_seed(hvd.rank())
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9), loss="mse")
    state = hvd_keras.elastic.KerasState(model, epoch=hvd.rank())
    assert hvd_keras.elastic.run is hvd.elastic.run
    state.sync()
    same_everywhere([w.tolist() for w in model.get_weights()], "keras weights after sync")
    assert state.epoch == 0
    saved = model.get_weights()
    model.fit(np.ones((4, 3)), np.ones((4, 2)), verbose=0)
    state.restore()
    assert all(np.array_equal(a, b) for a, b in zip(saved, model.get_weights()))
    assert int(model.optimizer.iterations.numpy()) == 0


if __name__ == "__main__":
    torch.set_num_threads(1)
    hvd.init()
    code = run_all()
    hvd.shutdown()
    sys.exit(code)
