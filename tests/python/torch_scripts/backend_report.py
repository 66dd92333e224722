"""Prints which CPU backends the global process set uses on this rank, then
checks one allreduce, so a test can tell the shm path from the Gloo path."""
import torch

import horovod.torch as hvd
from horovod_accel.common.default_runtime import DEFAULT_RUNTIME

hvd.init()
print(f"BACKENDS rank {hvd.rank()}: {','.join(DEFAULT_RUNTIME.runtime().backends())}", flush=True)
got = hvd.allreduce(torch.full((5,), float(hvd.rank() + 1)), op=hvd.Sum, name="check")
want = float(hvd.size() * (hvd.size() + 1) // 2)
assert torch.equal(got, torch.full((5,), want)), got
print(f"ALL OK rank {hvd.rank()}", flush=True)
