"""The schedule of the elastic test workers (scheduled_worker.py,
sampler_worker.py, tf2_worker.py), framework-free: where they log, and the
failures they inject at scheduled (epoch, batch) points.

Env: ELASTIC_DIR (logs and marker files), ELASTIC_SCHEDULE (JSON, see
scheduled_worker.py). Every worker appends JSON lines to
ELASTIC_DIR/<worker id>.jsonl.
"""
import json
import os
import signal
import sys
import time

DIR = os.environ["ELASTIC_DIR"]
SCHED = json.loads(os.environ["ELASTIC_SCHEDULE"])
WID = os.environ.get("_HOROVOD_ELASTIC_WORKER_ID", "static")
FAILURES = ("raise", "sigkill", "exit", "sleep")


def fire_once(i):
    """True the first time event i is reached in the whole job."""
    try:
        fd = os.open(os.path.join(DIR, f"event-{i}.done"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def log(**rec):
    with open(os.path.join(DIR, f"{WID}.jsonl"), "a") as f:
        f.write(json.dumps(rec) + "\n")


def events_at(epoch, batch):
    """[(index, event)] scheduled at (epoch, batch)."""
    return [(i, ev) for i, ev in enumerate(SCHED.get("events", []))
            if (ev["epoch"], ev["batch"]) == (epoch, batch)]


def inject_failures(epoch, batch, rank):
    """Runs the failures scheduled at (epoch, batch) for `rank`, each once
    per job: raise, exit(3), SIGKILL, or sleep (a long step on this rank)."""
    for i, ev in events_at(epoch, batch):
        if ev["do"] not in FAILURES or ev.get("rank") != rank or not fire_once(i):
            continue
        log(event=i, w=WID, what=ev["do"], t=time.time())
        if ev["do"] == "raise":
            raise RuntimeError(f"scheduled failure {i} on rank {rank}")
        if ev["do"] == "exit":
            sys.exit(3)
        if ev["do"] == "sleep":
            time.sleep(ev.get("seconds", 3))
        else:
            os.kill(os.getpid(), signal.SIGKILL)
