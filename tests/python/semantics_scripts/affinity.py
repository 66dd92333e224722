"""HOROVOD_THREAD_AFFINITY: after init, some thread of this process (the
background thread) is pinned to this local rank's entry of the list."""
import glob
import os

import horovod.torch as hvd

hvd.init()
want = os.environ["HOROVOD_THREAD_AFFINITY"].split(",")[hvd.local_rank()]
pinned = []
for status in glob.glob(f"/proc/{os.getpid()}/task/*/status"):
    with open(status) as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    if fields.get("Cpus_allowed_list", "").strip() == want:
        pinned.append(status)
assert pinned, f"rank {hvd.rank()}: no thread pinned to core {want}"
hvd.barrier()
print(f"SEMANTICS-OK affinity rank={hvd.rank()}", flush=True)
