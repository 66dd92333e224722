"""init_mismatch.py FLAG_DIR: ranks whose init() counts differ get a clear
error, not a hang. Rank 1 starts its init() only after rank 0's first init()
has timed out (HOROVOD_START_TIMEOUT=2, set by the test) and rank 0 said so
through a file in FLAG_DIR; rank 0 retries with a 10 s timeout, so it is at
init #2 while rank 1's first init() is #1. Rank 0's retry must fail naming
rank 1 and both init counts; rank 1 fails within its timeouts too
(HOROVOD_GLOO_TIMEOUT_SECONDS). Every rank prints 'INIT-ERROR <message>'.
Needs np 2."""
import os
import sys
import time

import horovod.torch as hvd

rank = int(os.environ["HOROVOD_RANK"])
flag = os.path.join(sys.argv[1], "rank0_first_init_failed")
if rank == 0:
    try:
        hvd.init()
        raise SystemExit("rank 0's first init() succeeded although rank 1 had not started it")
    except RuntimeError:
        os.environ["HOROVOD_START_TIMEOUT"] = "10"
        open(flag, "w").close()
else:
    deadline = time.monotonic() + 60
    while not os.path.exists(flag):  # waits for rank 0's event, not for a duration
        if time.monotonic() > deadline:
            raise SystemExit("rank 0 never reported its failed first init()")
        time.sleep(0.05)
try:
    hvd.init()
    print(f"INIT-OK rank {rank}", flush=True)
except RuntimeError as e:
    print(f"INIT-ERROR rank {rank}: {e}", flush=True)
