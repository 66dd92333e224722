"""interrupted_synchronize.py: a synchronize() interrupted while it waits
(KeyboardInterrupt from a signal handler) leaves its handle pending: the name
stays reserved, poll() still knows the handle, and a later synchronize()
returns the result. Checked for the per-op fast path (a named in-place
allreduce, whose handle is the core Work) and for a Handle (allgather).

np 2: rank 1 enqueues its ops only after rank 0 has been interrupted twice
(it waits in an allreduce of another name, which rank 0 joins then), so the
ops cannot complete early whatever the timing."""
import signal

import torch

import horovod.torch as hvd
from _sem_common import check, check_equal, done, raises

hvd.init()
rank, size = hvd.rank(), hvd.size()
check(size == 2, "runs at np 2")


def interrupt(*_):
    raise KeyboardInterrupt


if rank == 1:
    # Rank 0 waits on both ops meanwhile: each of its synchronize() calls is
    # interrupted (its wait slice is 1 s, the alarm 0.2 s).
    hvd.allreduce(torch.zeros(1), name="intr.go")
fast = torch.full((3,), float(rank + 1))
h_fast = hvd.allreduce_async_(fast, op=hvd.Sum, name="intr.fast")
h_gather = hvd.allgather_async(torch.full((2,), float(rank)), name="intr.gather")
if rank == 0:
    signal.signal(signal.SIGALRM, interrupt)
    for h, what in ((h_fast, "fast-path allreduce"), (h_gather, "allgather Handle")):
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        raises(KeyboardInterrupt, hvd.synchronize, h, what=f"interrupted synchronize ({what})")
        check(hvd.poll(h) is False, f"{what}: poll() still knows the handle, not completed")
    raises(ValueError, hvd.allreduce_async_, torch.zeros(3), name="intr.fast",
           contains=("already in flight",), what="name of the interrupted op still reserved")
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    hvd.allreduce(torch.zeros(1), name="intr.go")  # lets rank 1 enqueue its ops
check_equal(hvd.synchronize(h_fast), torch.full((3,), 3.0), "allreduce result after the interrupt")
check(hvd.synchronize(h_fast) is None, "a synchronized handle is gone")
check_equal(hvd.synchronize(h_gather), torch.tensor([0.0, 0.0, 1.0, 1.0]),
            "allgather result after the interrupt")
# The name is free again.
check_equal(hvd.synchronize(hvd.allreduce_async_(torch.ones(3), op=hvd.Sum, name="intr.fast")),
            torch.full((3,), 2.0), "name reused after the interrupted op completed")
hvd.shutdown()
done("interrupted_synchronize")
