"""Worker of benchmarks/elastic_recovery.py: an MLP trained with
hvd.DistributedOptimizer on random data, one timestamp per event.

    --mode elastic   the training loop under hvd.elastic.run with a TorchState
                     (model, optimizer, step) committed every --commit-every steps
    --mode static    a plain job: rank 0 writes a checkpoint file every
                     --commit-every steps; with --resume it starts from that file
                     (rank 0 loads it, then broadcast_parameters /
                     broadcast_optimizer_state, as upstream's examples do)

The worker on host --kill-host with local rank 0 SIGKILLs itself at the start
of step --kill-step (a multiple of --commit-every, so neither path loses work),
once per job (a marker file in --dir). Every process appends JSON lines
{"ev", "t" (time.time()), "pid", ...} to --dir/<pid>.jsonl:
  start (before `import torch`), imported, init, model (static: model and
  optimizer built), loaded (static: checkpoint loaded and broadcast), step {step, size, round}, kill, error (elastic: the
  HorovodInternalError / HostsUpdatedInterrupt the loop caught), synced (elastic:
  the reset callback, after reset + state sync).
"""
import time

T_START = time.time()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--mode", choices=("elastic", "static"), required=True)
p.add_argument("--dir", required=True)
p.add_argument("--steps", type=int, required=True)
p.add_argument("--kill-step", type=int, default=-1)
p.add_argument("--kill-host", default="127.0.0.1")
p.add_argument("--commit-every", type=int, default=10)
p.add_argument("--hidden", type=int, default=1024)
p.add_argument("--batch", type=int, default=32)
p.add_argument("--resume", action="store_true")
a = p.parse_args()

LOG = os.path.join(a.dir, f"{os.getpid()}.jsonl")
CKPT = os.path.join(a.dir, "checkpoint.pt")


def log(ev, **rec):
    rec.update(ev=ev, t=time.time(), pid=os.getpid(), mode=a.mode)
    with open(LOG, "a") as f:
        f.write(json.dumps(rec) + "\n")


log("start", t_start=T_START)

import torch  # noqa: E402

import horovod.torch as hvd  # noqa: E402
from horovod_accel.common import elastic as common_elastic  # noqa: E402
from horovod_accel.common.exceptions import HorovodInternalError, HostsUpdatedInterrupt  # noqa: E402

torch.set_num_threads(1)
log("imported")


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(512, a.hidden), torch.nn.ReLU(),
        torch.nn.Linear(a.hidden, a.hidden), torch.nn.ReLU(),
        torch.nn.Linear(a.hidden, 10))


def should_kill(step):
    if step != a.kill_step or os.environ.get("HOROVOD_HOSTNAME") != a.kill_host \
            or hvd.local_rank() != 0:
        return False
    try:  # once per job: the restarted step must not kill again
        os.close(os.open(os.path.join(a.dir, "killed"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def train_step(model, opt, x, y, step):
    if should_kill(step):
        log("kill", step=step, rank=hvd.rank(), host=os.environ.get("HOROVOD_HOSTNAME"))
        os.kill(os.getpid(), signal.SIGKILL)
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    log("step", step=step, size=hvd.size(), rank=hvd.rank(),
        round=int(os.environ.get("_HOROVOD_ELASTIC_ROUND", "0")), loss=float(loss.detach()))


def data(rank):
    g = torch.Generator().manual_seed(1000 + rank)
    return torch.randn(a.batch, 512, generator=g), torch.randint(0, 10, (a.batch,), generator=g)


def run_static():
    hvd.init()
    log("init", rank=hvd.rank(), size=hvd.size())
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size(), momentum=0.9)
    log("model")
    start = 0
    if a.resume and hvd.rank() == 0:
        ckpt = torch.load(CKPT)
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        start = ckpt["step"]
    start = hvd.broadcast_object(start, root_rank=0, name="start_step")
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
    log("loaded", step=start)
    x, y = data(hvd.rank())
    for step in range(start, a.steps):
        train_step(model, opt, x, y, step)
        if (step + 1) % a.commit_every == 0 and hvd.rank() == 0:
            tmp = CKPT + ".tmp"
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                        "step": step + 1}, tmp)
            os.replace(tmp, CKPT)
    if hvd.rank() == 0:
        print(f"DONE size={hvd.size()}", flush=True)


def run_elastic():
    hvd.init()
    log("init", rank=hvd.rank(), size=hvd.size())
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size(), momentum=0.9)
    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
    if hasattr(hvd, "elastic") and hasattr(hvd.elastic, "TorchState"):
        state = hvd.elastic.TorchState(model, opt, step=0)
        run = hvd.elastic.run
    else:  # the common fallback (tests/python/elastic_scripts/scheduled_worker.py)
        state = common_elastic.ObjectState(hvd.broadcast_object, hvd.rank, hvd.allgather_object,
                                           step=0, params=None)

        def run(func):
            return common_elastic.run_fn(func, lambda: (hvd.shutdown(), hvd.init()))

    def on_reset():
        log("synced", rank=hvd.rank(), size=hvd.size(),
            round=int(os.environ.get("_HOROVOD_ELASTIC_ROUND", "0")))
        for group in opt.param_groups:
            group["lr"] = 0.01 * hvd.size()

    state.register_reset_callbacks([on_reset])

    @run
    def train(state):
        if not hasattr(state, "model") and state.params is not None:
            model.load_state_dict(state.params)  # fallback state: rank 0's tensors
        x, y = data(hvd.rank())
        try:
            while state.step < a.steps:
                train_step(model, opt, x, y, state.step)
                state.step += 1
                if state.step % a.commit_every == 0:
                    if not hasattr(state, "model"):
                        state.params = {k: v.clone() for k, v in model.state_dict().items()}
                    state.commit()
        except (HorovodInternalError, HostsUpdatedInterrupt) as e:
            log("error", rank=hvd.rank(), kind=type(e).__name__, msg=str(e)[:300])
            raise
        return hvd.size()

    size = train(state)
    if hvd.rank() == 0:
        print(f"DONE size={size}", flush=True)


if __name__ == "__main__":
    run_static() if a.mode == "static" else run_elastic()
