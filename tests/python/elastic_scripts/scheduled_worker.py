"""An elastic worker driven by a schedule, for the launcher's elastic tests.

Env: ELASTIC_DIR (log directory and marker files), ELASTIC_DEVICE (the torch
device of the allreduced tensors, default cpu), ELASTIC_SCHEDULE (JSON):
  {"epochs": E, "batches": B, "sleep": seconds per batch,
   "events": [{"epoch": e, "batch": b, "rank": r, "do": "raise"|"sigkill"|"exit"|"sleep"},
              {"epoch": e, "batch": b, "do": "hosts", "hosts": "h1:2\\nh2:2"},
              {"epoch": e, "batch": b, "do": "await_size", "size": n},
              {"epoch": e, "batch": b, "rank": r, "do": "deadlock"}]}
Each event fires once in the whole job (a marker file records it; after a
restore the same batch runs again without it). A "hosts" event: rank 0
rewrites ELASTIC_DIR/hosts.txt (what the test's discovery script prints),
then every rank checks for host updates until the driver's update interrupts
them, so the reset happens at exactly that batch whatever the timing. An
"await_size" event: unless the job already has `size` ranks, the ranks wait
the same way for the update that grows it (e.g. a host back from its cooldown).
Every worker appends one JSON line per batch to ELASTIC_DIR/<worker id>.jsonl:
{"w", "round", "rank", "size", "host", "epoch", "batch", "sum"}; the allreduced
sum of ones must equal the size. Rank 0 prints DONE at the end.
"""
import os
import time

import torch

import horovod.torch as hvd
from _schedule import DIR, SCHED, WID, events_at, fire_once, inject_failures, log
from horovod_accel.common.exceptions import HostsUpdatedInterrupt

DEVICE = os.environ.get("ELASTIC_DEVICE", "cpu")


def await_host_update(state, i, on_update=None):
    """Checks for host updates until the driver's update interrupts this
    rank (the check is collective: every rank raises at the same call)."""
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            state.check_host_updates()
        except HostsUpdatedInterrupt:
            if on_update is not None:
                on_update()
            raise
        time.sleep(0.05)  # polling the driver, not waiting for a peer
    raise RuntimeError(f"no host update within 60 s of event {i}")


def handle_events(state):
    """The schedule's events at the current (epoch, batch): host changes
    (every rank takes part) and failures (_schedule.inject_failures)."""
    for i, ev in events_at(state.epoch, state.batch):
        if ev["do"] == "hosts":
            if hvd.rank() == 0 and fire_once(i):
                tmp = os.path.join(DIR, "hosts.txt.tmp")
                with open(tmp, "w") as f:
                    f.write(ev["hosts"].strip() + "\n")
                os.replace(tmp, os.path.join(DIR, "hosts.txt"))
                log(event=i, w=WID, what="hosts", t=time.time())
            # This batch runs again after the reset: the ranks agree that the
            # update is consumed (new workers were not there to see it).
            seen = os.path.join(DIR, f"event-{i}.seen")
            if hvd.allreduce(torch.tensor([float(os.path.exists(seen))]), op=hvd.Max,
                             name=f"hosts-{i}")[0] > 0:
                continue
            await_host_update(state, i, lambda: open(seen, "w").close())
        elif ev["do"] == "deadlock":
            # A collective only this rank submits (a program bug): deadlock
            # detection fails every rank's op and ends the generation, and
            # hvd.elastic.run restores the last commit and runs the batch
            # again (NOTE [A deadlock ends the generation]).
            if hvd.rank() == ev["rank"] and fire_once(i):
                hvd.allreduce(torch.ones(1), name=f"only-on-rank-{ev['rank']}")
        elif ev["do"] == "await_size":
            # The job grows back to "size" by the time this batch runs again,
            # whether the update arrived before this batch or arrives here.
            if hvd.size() < ev["size"]:
                await_host_update(state, i)
    inject_failures(state.epoch, state.batch, hvd.rank())


def main():
    hvd.init()
    state = hvd.elastic.ObjectState(epoch=0, batch=0)

    @hvd.elastic.run
    def train(state):
        while state.epoch < SCHED["epochs"]:
            while state.batch < SCHED["batches"]:
                handle_events(state)
                s = hvd.allreduce(torch.ones(4, device=DEVICE), op=hvd.Sum, name="step")
                log(w=WID, round=int(os.environ.get("_HOROVOD_ELASTIC_ROUND", "0")),
                    rank=hvd.rank(), size=hvd.size(), host=os.environ.get("HOROVOD_HOSTNAME"),
                    epoch=state.epoch, batch=state.batch, sum=float(s.cpu()[0]),
                    device=s.device.type)
                time.sleep(SCHED.get("sleep", 0.0))
                state.batch += 1
                state.commit()
            state.epoch += 1
            state.batch = 0
            state.commit()
        return hvd.size()

    size = train(state)
    if hvd.rank() == 0:
        print(f"DONE size={size}", flush=True)


if __name__ == "__main__":
    main()
