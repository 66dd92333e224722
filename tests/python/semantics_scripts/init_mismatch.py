"""init_mismatch.py: ranks whose init() counts differ get a clear error, not
a hang. Rank 0's first init() times out (HOROVOD_START_TIMEOUT=2, set by the
test) because rank 1 starts 4 s late; rank 0 retries with a 10 s timeout, so
it is at init #2 while rank 1's first init() is #1. Rank 0's retry must fail
naming rank 1 and both init counts; rank 1 fails within its timeouts too
(HOROVOD_GLOO_TIMEOUT_SECONDS). Every rank prints 'INIT-ERROR <message>'.
Needs np 2."""
import os
import time

import horovod.torch as hvd

rank = int(os.environ["HOROVOD_RANK"])
if rank == 0:
    try:
        hvd.init()
        raise SystemExit("rank 0's first init() succeeded although rank 1 was late")
    except RuntimeError:
        os.environ["HOROVOD_START_TIMEOUT"] = "10"
else:
    time.sleep(4)
try:
    hvd.init()
    print(f"INIT-OK rank {rank}", flush=True)
except RuntimeError as e:
    print(f"INIT-ERROR rank {rank}: {e}", flush=True)
