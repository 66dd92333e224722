"""Helpers of the torch.compile training checks (run_compile_checks.py, run
by test_torch_compile_training.py through horovodrun; every rank runs the
same script).

Every check trains the same model twice on every rank, once compiled and once
eager, both through DistributedOptimizer on the same data and seeds, and
compares the two (see TOLERANCES), and checks that the ranks hold identical
parameters (bit for bit: the reduced gradients are the same everywhere).
The checks' registry and helpers are those of ../training_scripts/train_common.py.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir,
                                "training_scripts"))

import torch  # noqa: E402
import torch._dynamo  # noqa: E402
from torch._dynamo.backends.registry import lookup_backend  # noqa: E402

import horovod.torch as hvd  # noqa: E402
from train_common import batch, mlp, shard  # noqa: E402

STEPS = 5
BATCH_PER_RANK = 4

# Largest parameter difference, relative to max(1, |eager parameter|), allowed
# between the compiled and the eager run after STEPS steps (measured on torch
# 2.13 at np 2 in brackets). aot_eager runs the traced aten ops eagerly, so
# it matches eager unless AOT autograd decomposes an op differently: 1e-6, a
# few float32 ulps per step (measured 0, with and without bf16 autocast).
# Inductor fuses ops and reorders float32 reductions: 1e-5 (3e-8). Under bf16
# autocast inductor keeps fused intermediates in float32 where eager rounds
# them to bf16 (eps 2^-8 = 3.9e-3): 5e-3 (5.6e-4).
TOLERANCES = {"aot_eager": 1e-6, "aot_eager+bf16": 1e-6, "inductor": 1e-5,
              "inductor+bf16": 5e-3}


class CountingBackend:
    """A torch.compile backend that counts the graphs Dynamo hands it (one
    per compilation or recompilation of a frame) and compiles them with the
    named backend."""

    def __init__(self, inner="aot_eager"):
        self.name = inner
        self.inner = lookup_backend(inner)
        self.graphs = 0

    def __call__(self, graph_module, example_inputs):
        self.graphs += 1
        return self.inner(graph_module, example_inputs)


def data(step):
    """This rank's shard of step's global batch (the same on every rank)."""
    x, y = batch(1000 + step, BATCH_PER_RANK * hvd.size(), dtype=torch.float32)
    return shard(x, hvd.rank(), hvd.size()), shard(y, hvd.rank(), hvd.size())


def sgd(params):
    return torch.optim.SGD(params, lr=0.1, momentum=0.9)


def adam(params):
    return torch.optim.Adam(params, lr=0.01)


def plain_step(net, opt, x, y, step):
    opt.zero_grad()
    ((net(x) - y) ** 2).mean().backward()
    opt.step()


def bf16_autocast_step(net, opt, x, y, step):
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = net(x)
    ((out.float() - y) ** 2).mean().backward()
    opt.step()


def train(compiled, step_fn=plain_step, make_opt=sgd, backend="aot_eager", seed=0,
          steps=STEPS):
    """Trains mlp(seed) (float32) for `steps` steps with DistributedOptimizer;
    the model is torch.compile'd (through a CountingBackend) if `compiled`.
    The broadcasts and the optimizer see the compiled wrapper's names
    (`_orig_mod.`-prefixed). Returns (plain model, optimizer, backend or None)."""
    torch._dynamo.reset()
    model = mlp(seed, dtype=torch.float32)
    counter = CountingBackend(backend) if compiled else None
    net = torch.compile(model, backend=counter) if compiled else model
    opt = make_opt(net.parameters())
    hvd.broadcast_parameters(net.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    opt = hvd.DistributedOptimizer(opt, named_parameters=net.named_parameters())
    for step in range(steps):
        x, y = data(step)
        step_fn(net, opt, x, y, step)
    return model, opt, counter


def assert_compiled_once(counter, what):
    """Dynamo compiled the model's forward once: no recompilation across steps."""
    assert counter.graphs == 1, f"{what}: {counter.graphs} graphs compiled (recompiled)"
