"""timeline.py MODE OUTDIR — Chrome-trace timeline written by rank 0.

file:    HOROVOD_TIMELINE=<OUTDIR>/file.json and HOROVOD_TIMELINE_MARK_CYCLES=1
         are set by the test; after shutdown rank 0 checks the file.
dynamic: HOROVOD_TIMELINE=DYNAMIC; start_timeline(path, mark_cycles=True) /
         stop_timeline(); right after stop the file is valid JSON with the
         expected records; ops after stop are not recorded; a second
         start/stop to another file works.
The pytest side checks the files again after the job."""
import json
import os
import sys
import time

import torch

import horovod.torch as hvd
from _sem_common import check, check_equal, done

mode, outdir = sys.argv[1], sys.argv[2]


def run_ops(tag, n=5):
    size = hvd.size()
    for i in range(n):
        check_equal(hvd.allreduce(torch.full((10,), float(i)), op=hvd.Sum, name=tag),
                    torch.full((10,), float(i * size)), f"allreduce {tag} {i}")
    hvd.allgather(torch.ones(2), name=f"{tag}_gather")
    hvd.broadcast(torch.ones(2), root_rank=0, name=f"{tag}_bcast")
    time.sleep(0.05)  # a few idle cycles, for CYCLE_START markers


def check_trace(path, must, must_not=()):
    with open(path) as f:
        events = json.load(f)  # must be valid JSON as it is
    check(isinstance(events, list) and events, f"{path}: not a non-empty JSON array")
    text = json.dumps(events)
    for s in must:
        check(s in text, f"{path}: no {s!r} in the timeline")
    for s in must_not:
        check(s not in text, f"{path}: unexpected {s!r} in the timeline")
    names = {e.get("args", {}).get("name") for e in events if e.get("ph") == "M"}
    phases = {(e.get("name"), e.get("ph")) for e in events}
    check(("NEGOTIATE_ALLREDUCE", "B") in phases, f"{path}: no NEGOTIATE_ALLREDUCE begin event")
    check(("ALLREDUCE", "B") in phases, f"{path}: no ALLREDUCE begin event")
    # Chrome-trace E events carry no name: every B must be closed by an E
    # on the same pid (nothing is left open once the timeline is stopped).
    for pid in {e.get("pid") for e in events}:
        nb = sum(1 for e in events if e.get("pid") == pid and e.get("ph") == "B")
        ne = sum(1 for e in events if e.get("pid") == pid and e.get("ph") == "E")
        check(nb == ne, f"{path}: pid {pid} has {nb} B but {ne} E events")
    check(any(e.get("name") == "CYCLE_START" and e.get("ph") == "i" for e in events),
          f"{path}: no instant CYCLE_START marker")
    check(any("start_time_since_epoch_in_micros" in e.get("args", {}) for e in events),
          f"{path}: no start_time_since_epoch_in_micros metadata")
    return names


EXPECTED = ("NEGOTIATE_ALLREDUCE", "ALLREDUCE", "CYCLE_START", "start_time_since_epoch_in_micros")

if mode == "file":
    path = os.environ["HOROVOD_TIMELINE"]
    hvd.init()
    run_ops("tl_file")
    hvd.shutdown()
    if int(os.environ.get("HOROVOD_RANK", "0")) == 0:
        names = check_trace(path, ("allreduce.tl_file", "allgather.tl_file_gather",
                                   "broadcast.tl_file_bcast") + EXPECTED)
        check("allreduce.tl_file" in names, f"no process_name metadata for allreduce.tl_file: {names}")
    done("timeline file")

elif mode == "dynamic":
    check_equal(os.environ.get("HOROVOD_TIMELINE"), "DYNAMIC", "HOROVOD_TIMELINE")
    hvd.init()
    rank = hvd.rank()
    run_ops("before_start", n=1)  # not recorded: no timeline yet
    first = os.path.join(outdir, "dyn1.json")
    second = os.path.join(outdir, "dyn2.json")
    hvd.start_timeline(first, mark_cycles=True)
    run_ops("tl_dyn")
    hvd.stop_timeline()
    hvd.barrier()  # every rank stopped before rank 0 reads and the others go on
    if rank == 0:
        check_trace(first, ("allreduce.tl_dyn",) + EXPECTED, must_not=("before_start",))
        size_at_stop = os.path.getsize(first)
    run_ops("after_stop", n=2)
    hvd.start_timeline(second, mark_cycles=True)
    run_ops("tl_dyn2")
    hvd.stop_timeline()
    hvd.barrier()
    if rank == 0:
        check_trace(second, ("allreduce.tl_dyn2",) + EXPECTED, must_not=("after_stop", "allreduce.tl_dyn\""))
        check_equal(os.path.getsize(first), size_at_stop, "first timeline untouched after stop")
        check_trace(first, ("allreduce.tl_dyn",), must_not=("after_stop", "tl_dyn2"))
    hvd.shutdown()
    done("timeline dynamic")
else:
    sys.exit(f"unknown mode {mode}")
