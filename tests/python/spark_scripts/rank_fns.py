"""Functions that test_spark_run.py runs on the ranks of horovod.spark jobs.

They travel by reference (module `rank_fns`): the rank processes import this
file through the caller's sys.path, which horovod.run's call record carries.
Data is f(rank, index), so every expected value is known without
communication.
"""
import os
import signal
import time


def topology(x):
    import horovod.torch as hvd  # noqa: PLC0415
    hvd.init()
    return {"rank": hvd.rank(), "size": hvd.size(), "local_rank": hvd.local_rank(),
            "local_size": hvd.local_size(), "cross_size": hvd.cross_size(), "x": x,
            "env_rank": int(os.environ["HOROVOD_RANK"])}


def collectives():
    import horovod.torch as hvd  # noqa: PLC0415
    import torch  # noqa: PLC0415
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    base = torch.arange(4, dtype=torch.float32)
    total = hvd.allreduce(base * (r + 1), op=hvd.Sum, name="sum")
    mean = hvd.allreduce(base + r, name="mean")
    # rank r contributes r + 1 rows of value r
    gathered = hvd.allgather(torch.full((r + 1, 2), float(r)), name="gather")
    root = n - 1
    bcast = hvd.broadcast(torch.full((3,), float(r * 10 + 7)), root_rank=root, name="bcast")
    return {"sum": total.tolist(), "mean": mean.tolist(), "gather": gathered[:, 0].tolist(),
            "bcast": bcast.tolist()}


def raise_on_rank_1(marker):
    """Rank 1 writes the time to `marker`, then raises."""
    import horovod.torch as hvd  # noqa: PLC0415
    import torch  # noqa: PLC0415
    hvd.init()
    if hvd.rank() == 1:
        with open(marker, "w") as f:
            f.write(repr(time.time()))
        raise ValueError("bad value on rank 1")
    hvd.allreduce(torch.ones(1), name="never")  # rank 1 never joins
    return hvd.rank()


def exit_on_rank_1():
    import horovod.torch as hvd  # noqa: PLC0415
    import torch  # noqa: PLC0415
    hvd.init()
    if hvd.rank() == 1:
        print("rank 1 is leaving", file=__import__("sys").stderr, flush=True)
        os._exit(3)
    hvd.allreduce(torch.ones(1), name="never")
    return hvd.rank()


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def secret_exposure():
    """Where this rank can see the job secret: the command lines of every
    process on the machine, and the start-time environments of itself and of
    its Spark task (what `ps e` shows)."""
    secret = os.environ["_HOROVOD_SECRET_KEY"].encode()
    cmdlines = [p for p in os.listdir("/proc") if p.isdigit() and
                secret in _read(f"/proc/{p}/cmdline")]
    return {"secret_len": len(secret), "cmdlines": cmdlines,
            "own_environ": secret in _read("/proc/self/environ"),
            "task_environ": secret in _read(f"/proc/{os.getppid()}/environ"),
            "task_cmdline": secret in _read(f"/proc/{os.getppid()}/cmdline")}


def chatty(tag):
    import sys  # noqa: PLC0415
    import horovod.torch as hvd  # noqa: PLC0415
    hvd.init()
    print(f"out {tag} from {hvd.rank()}", flush=True)
    print(f"err {tag} from {hvd.rank()}", file=sys.stderr, flush=True)
    return {"var": os.environ.get("HVDA_SPARK_TEST_VAR"), "python": sys.executable,
            "devices": __import__("horovod.spark.task", fromlist=["x"]).get_available_devices()}


def elastic_steps(marker, steps, how, want_size):
    """An elastic function: at step 3, rank 1 kills (once, marker file)
    either its own process ("rank") or its Spark task's Python worker
    ("task"); the survivors go on, a replacement task joins. Trains at least
    `steps` steps, and on (up to 4x as many) until a step ran with want_size
    ranks again. Returns the sizes of the job at every step (state synced
    from rank 0)."""
    import horovod.torch as hvd  # noqa: PLC0415
    import torch  # noqa: PLC0415
    hvd.init()
    state = hvd.elastic.ObjectState(step=0, sizes=[])

    @hvd.elastic.run
    def train(state):
        while (state.step < steps or state.sizes[-1] < want_size) and state.step < 4 * steps:
            if state.step == 3 and hvd.rank() == 1 and not os.path.exists(marker):
                open(marker, "w").close()
                os.kill(os.getppid() if how == "task" else os.getpid(), signal.SIGKILL)
                time.sleep(60)  # dies with its task (PR_SET_PDEATHSIG)
            hvd.allreduce(torch.ones(1), name="step")
            state.sizes.append(hvd.size())
            state.step += 1
            state.commit()
            time.sleep(0.2)
        return {"rank": hvd.rank(), "size": hvd.size(), "sizes": state.sizes}

    return train(state)
