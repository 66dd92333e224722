"""Data-parallel equivalence checks: N ranks with DistributedOptimizer on
their shards end with the parameters of one process trained on the
concatenated batch (see train_common.train_pair)."""
import torch
import torch.nn as nn

import horovod.torch as hvd
from horovod_accel.common import buckets as optimizer_buckets
from train_common import batch, check, mlp, mse, shard, train_pair

BATCH = 12   # samples per rank and pass


def data_loss(seed_base=0):
    """loss_fn for train_pair: rank r's shard of the global batch of (step, pass)."""
    def loss_fn(model, step, k, r):
        x, y = batch(seed_base + 100 * step + k, BATCH * hvd.size())
        return mse(model, shard(x, r, hvd.size()), shard(y, r, hvd.size()))
    return loss_fn


def sgd(params):
    return torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=1e-3)


def adam(params):
    return torch.optim.Adam(params, lr=0.01)


@check
def sgd_matches_single_process():
    train_pair(lambda: mlp(1), sgd, data_loss(), steps=4, what="SGD")


@check
def adam_matches_single_process():
    train_pair(lambda: mlp(2), adam, data_loss(), steps=4, what="Adam")


@check
def unnamed_parameters_and_float32():
    def loss_fn(model, step, k, r):
        x, y = batch(7 + step, BATCH * hvd.size(), dtype=torch.float32)
        return mse(model, shard(x, r, hvd.size()), shard(y, r, hvd.size()))
    model = mlp(3, dtype=torch.float32)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    ref = mlp(3, dtype=torch.float32)
    opt = hvd.DistributedOptimizer(adam(model.parameters()))   # positional names
    ref_opt = adam(ref.parameters())
    for step in range(3):
        opt.zero_grad()
        loss_fn(model, step, 0, hvd.rank()).backward()
        opt.step()
        ref_opt.zero_grad()
        (sum(loss_fn(ref, step, 0, r) for r in range(hvd.size())) / hvd.size()).backward()
        ref_opt.step()
    for p, q in zip(model.parameters(), ref.parameters()):
        assert (p - q).abs().max() < 1e-5, "float32 Adam with positional names differs"


@check
def many_small_buckets():
    saved = optimizer_buckets.DEFAULT_BUCKET_BYTES
    optimizer_buckets.DEFAULT_BUCKET_BYTES = 600      # a few parameters per bucket
    try:
        _, opt = train_pair(lambda: mlp(4), sgd, data_loss(1), steps=3, what="small buckets")
    finally:
        optimizer_buckets.DEFAULT_BUCKET_BYTES = saved
    assert len(opt._hvd_buckets) >= 3, opt._hvd_buckets


@check
def groups_int_list_and_num_groups():
    train_pair(lambda: mlp(5), sgd, data_loss(2), steps=3, dist_kwargs={"groups": 2},
               what="groups=2")
    train_pair(lambda: mlp(5), adam, data_loss(3), steps=3, dist_kwargs={"num_groups": 3},
               what="num_groups=3")

    def list_groups(model):
        ps = [p for _, p in model.named_parameters()]
        return {"groups": [[ps[0], ps[3]], [ps[1], ps[2]]]}   # the rest: one group each
    train_pair(lambda: mlp(6), sgd, data_loss(4), steps=3, dist_kwargs=list_groups,
               what="groups=list")


@check
def backward_passes_per_step():
    _, opt = train_pair(lambda: mlp(7), sgd, data_loss(5), steps=3, passes=2,
                        dist_kwargs={"backward_passes_per_step": 2}, what="bpps=2")
    assert opt.backward_passes_per_step == 2
    train_pair(lambda: mlp(8), adam, data_loss(6), steps=2, passes=3,
               dist_kwargs={"backward_passes_per_step": 3}, what="bpps=3")


@check
def set_backward_passes_per_step_changes_accumulation():
    model = mlp(9)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    opt = hvd.DistributedOptimizer(sgd(model.parameters()), named_parameters=model.named_parameters())
    loss = data_loss(7)
    opt.set_backward_passes_per_step(2)
    for step in range(2):
        opt.zero_grad()
        loss(model, step, 0, hvd.rank()).backward()
        loss(model, step, 1, hvd.rank()).backward()
        opt.step()
    # Too many passes: the third backward finds gradients already being reduced.
    opt.zero_grad()
    for k in range(2):
        loss(model, 0, k, hvd.rank()).backward()
    try:
        loss(model, 0, 2, hvd.rank()).backward()
    except (AssertionError, RuntimeError) as e:
        assert "backward_passes_per_step" in str(e), e
    else:
        raise AssertionError("a third backward pass with backward_passes_per_step=2 did not raise")
    opt.synchronize()        # drains what was submitted; the optimizer is usable again
    opt.set_backward_passes_per_step(1)
    opt.zero_grad()
    loss(model, 0, 0, hvd.rank()).backward()
    opt.step()


def two_heads(seed):
    torch.manual_seed(seed)
    return nn.ModuleDict({"body": nn.Linear(6, 8), "a": nn.Linear(8, 3), "b": nn.Linear(8, 3),
                          "c": nn.Linear(8, 3)}).double()


def two_heads_loss(model, step, k, r):
    x, y = batch(50 + step, BATCH * hvd.size())
    h = torch.tanh(model["body"](shard(x, r, hvd.size())))
    y = shard(y, r, hvd.size())
    loss = ((model["a"](h) - y) ** 2).mean()
    if r == 0 or step % 2 == 1:       # head b: only rank 0 on even steps
        loss = loss + ((model["b"](h) - y) ** 2).mean()
    if r == hvd.size() - 1:           # head c: only the last rank, every step
        loss = loss + ((model["c"](h) - y) ** 2).mean()
    return loss


@check
def parameter_unused_on_some_ranks():
    # Auto buckets (heads share a bucket with used parameters), one bucket per parameter,
    # and Adam (zeros reach the optimizer as gradients, as in upstream).
    train_pair(lambda: two_heads(10), lambda ps: torch.optim.SGD(ps, lr=0.1), two_heads_loss,
               steps=4, what="unused, auto buckets")
    saved = optimizer_buckets.DEFAULT_BUCKET_BYTES
    optimizer_buckets.DEFAULT_BUCKET_BYTES = 1
    try:
        train_pair(lambda: two_heads(11), lambda ps: torch.optim.SGD(ps, lr=0.1), two_heads_loss,
                   steps=4, what="unused, one bucket per parameter")
    finally:
        optimizer_buckets.DEFAULT_BUCKET_BYTES = saved
    train_pair(lambda: two_heads(12), lambda ps: torch.optim.SGD(ps, lr=0.1), two_heads_loss,
               steps=3, passes=2, dist_kwargs={"backward_passes_per_step": 2},
               what="unused with bpps=2")


@check
def predivide_factor_and_sum():
    train_pair(lambda: mlp(13), sgd, data_loss(8), steps=3,
               dist_kwargs={"gradient_predivide_factor": 2.0}, what="predivide 2")
    train_pair(lambda: mlp(14), lambda ps: torch.optim.SGD(ps, lr=0.02), data_loss(9), steps=3,
               dist_kwargs={"op": hvd.Sum}, combine="sum", what="op=Sum")


@check
def compression_fp16_and_bf16():
    # fp16 keeps ~3 decimal digits of each gradient; bf16 ~2.
    train_pair(lambda: mlp(15), sgd, data_loss(10), steps=3,
               dist_kwargs={"compression": hvd.Compression.fp16}, tol=2e-3, what="fp16")
    train_pair(lambda: mlp(16, dtype=torch.float32), adam, data_loss_f32(11), steps=3,
               dist_kwargs={"compression": hvd.Compression.fp16}, tol=2e-2, what="fp16 Adam")
    train_pair(lambda: mlp(17), sgd, data_loss(12), steps=3,
               dist_kwargs={"compression": hvd.Compression.bf16}, tol=2e-2, what="bf16")


def data_loss_f32(seed_base):
    def loss_fn(model, step, k, r):
        x, y = batch(seed_base + 100 * step + k, BATCH * hvd.size(), dtype=torch.float32)
        return mse(model, shard(x, r, hvd.size()), shard(y, r, hvd.size()))
    return loss_fn


class EmbeddingModel(nn.Module):
    def __init__(self, seed, sparse):
        super().__init__()
        torch.manual_seed(seed)
        self.emb = nn.Embedding(20, 4, sparse=sparse).double()
        self.out = nn.Linear(4, 2).double()

    def forward(self, idx):
        return self.out(self.emb(idx).mean(dim=1))


def embedding_loss(model, step, k, r):
    g = torch.Generator().manual_seed(900 + step)
    idx = torch.randint(0, 20, (BATCH * hvd.size(), 5), generator=g)
    y = torch.randn(BATCH * hvd.size(), 2, generator=g, dtype=torch.float64)
    return ((model(shard(idx, r, hvd.size())) - shard(y, r, hvd.size())) ** 2).mean()


@check
def sparse_embedding_allgather_and_as_dense():
    for sparse_as_dense in (False, True):
        model, opt = train_pair(lambda: EmbeddingModel(20, sparse=True),
                                lambda ps: torch.optim.SGD(ps, lr=0.5), embedding_loss, steps=4,
                                dist_kwargs={"sparse_as_dense": sparse_as_dense},
                                what=f"sparse embedding (sparse_as_dense={sparse_as_dense})")
        assert model.emb.weight.grad.is_sparse, "the optimizer should see a sparse gradient"


@check
def allreduces_start_during_backward():
    """With one parameter per bucket, the last layers' gradients are already
    being reduced when backward reaches the first layer (overlap)."""
    saved = optimizer_buckets.DEFAULT_BUCKET_BYTES
    optimizer_buckets.DEFAULT_BUCKET_BYTES = 1
    try:
        model = mlp(18)
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        opt = hvd.DistributedOptimizer(sgd(model.parameters()),
                                       named_parameters=model.named_parameters())
    finally:
        optimizer_buckets.DEFAULT_BUCKET_BYTES = saved
    in_flight = []
    model[0].register_full_backward_pre_hook(
        lambda *_: in_flight.append(len(opt._hvd_submitted)))
    x, y = batch(77, BATCH)
    x.requires_grad_(True)       # so backward reaches the first layer's module hook
    mse(model, x, y).backward()
    opt.step()
    last_layer_params = 2 * (len(model) // 2)    # weights and biases after model[0]
    assert in_flight and in_flight[0] >= last_layer_params, \
        f"{in_flight} buckets in flight when backward reached the first layer"
