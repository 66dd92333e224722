"""stall.py — the stall inspector warns (without shutting down).

HOROVOD_STALL_CHECK_TIME_SECONDS=1 is set by the test.
Phase 1: rank 0 submits 'stalled_tensor' and the other ranks only submit it
~3 s later, so the coordinator must log a warning on stderr naming the
tensor and the missing ranks (1..size-1).
Phase 2 (np >= 3): the same inside process set [1, 2]: rank 1 submits
'ps_stalled_tensor', rank 2 is late; the warning names global rank 2.
Phase 3: a tensor in the response cache (completed before) stalls the same
way: the warning must still name it ('cached_stalled_tensor').
The ops then complete normally and the job goes on. Needs np >= 2."""
import os
import time

import torch

import horovod.torch as hvd
from _sem_common import check, check_equal, done

LATE = 3.0
ps12 = hvd.ProcessSet([1, 2])
hvd.init(process_sets=[ps12] if int(os.environ.get("HOROVOD_SIZE", "1")) >= 3 else None)
rank, size = hvd.rank(), hvd.size()
check(size >= 2, "stall.py needs at least 2 ranks")
hvd.allreduce(torch.ones(1), name="warmup")

# Phase 1: global set.
if rank == 0:
    h = hvd.allreduce_async(torch.ones(8), op=hvd.Sum, name="stalled_tensor")
    hvd.barrier()  # the others only start waiting once rank 0 has submitted
else:
    hvd.barrier()
    time.sleep(LATE)
    h = hvd.allreduce_async(torch.ones(8), op=hvd.Sum, name="stalled_tensor")
check_equal(hvd.synchronize(h), torch.full((8,), float(size)), "stalled tensor after the others caught up")
check_equal(hvd.allreduce(torch.ones(2), op=hvd.Sum, name="after_stall"), torch.full((2,), float(size)),
            "allreduce after the stall warning")

# Phase 2: inside process set [1, 2] (rank 0 waits in a global barrier).
if size >= 3:
    if rank == 1:
        h = hvd.allreduce_async(torch.ones(4), op=hvd.Sum, name="ps_stalled_tensor", process_set=ps12)
        hvd.barrier(process_set=ps12)
    elif rank == 2:
        hvd.barrier(process_set=ps12)
        time.sleep(LATE)
        h = hvd.allreduce_async(torch.ones(4), op=hvd.Sum, name="ps_stalled_tensor", process_set=ps12)
    if rank in (1, 2):
        check_equal(hvd.synchronize(h), torch.full((4,), 2.0), "stalled tensor in the process set")
    hvd.barrier()

# Phase 3: a cached tensor (a cache hit on rank 0 alone) stalls.
for i in range(3):
    hvd.allreduce(torch.ones(4), op=hvd.Sum, name="cached_stalled_tensor")
if rank == 0:
    h = hvd.allreduce_async(torch.ones(4), op=hvd.Sum, name="cached_stalled_tensor")
    hvd.barrier()
else:
    hvd.barrier()
    time.sleep(LATE)
    h = hvd.allreduce_async(torch.ones(4), op=hvd.Sum, name="cached_stalled_tensor")
check_equal(hvd.synchronize(h), torch.full((4,), float(size)), "cached stalled tensor")
hvd.shutdown()
done("stall", size=size)
