"""TorchEstimator's checkpoint: the file `runs/<run_id>/<checkpoint filename>`
(default `checkpoint`), written by rank 0 after every epoch.

Format: torch.save of {"model": model.state_dict(), "optimizer":
optimizer.state_dict() with the learning rate of ONE process (the training
scales it by the number of processes, so a run may resume at another
num_proc), "epoch": epochs completed, "history": their metrics}. Upstream's
files have only "model" and "optimizer"; one of them resumes its weights
and runs every epoch.
"""
import copy
import io
import posixpath

from horovod_accel.spark.common.training import Checkpoint


def encode(model, optimizer, lr_divisor, epochs, history):
    """The checkpoint's bytes. optimizer: its learning rates are divided by
    lr_divisor in the file (the optimizer is not changed)."""
    import torch  # noqa: PLC0415
    opt_state = optimizer.state_dict()
    opt_state["param_groups"] = [dict(g, lr=g["lr"] / lr_divisor)
                                 for g in opt_state["param_groups"]]
    model_state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    buf = io.BytesIO()
    torch.save({"model": model_state, "optimizer": opt_state, "epoch": int(epochs),
                "history": history}, buf)
    return buf.getvalue()


def decode(data):
    """The checkpoint dict of bytes written by encode (or by upstream)."""
    import torch  # noqa: PLC0415
    return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)


def load(store, run_id, model, optimizer):
    """The run's Checkpoint in the store, or None if it has none; ValueError
    if its state does not fit `model` and `optimizer` (another architecture
    under the same run_id)."""
    path = posixpath.join(store.get_checkpoint_path(run_id), store.get_checkpoint_filename())
    if not store.exists(path):
        return None
    data = store.read(path)
    try:
        restore(model, optimizer, data)
    except (KeyError, RuntimeError, ValueError) as e:
        raise ValueError(f"the checkpoint of run {run_id!r} ({path}) does not fit this model and "
                         f"optimizer: {e}. Resume it with the model it was trained with, or "
                         "give this fit another run_id") from e
    state = decode(data)
    return Checkpoint(int(state.get("epoch", 0)), list(state.get("history", [])), data)


def from_result(result):
    """The Checkpoint of rank 0's return value (remote.train)."""
    return Checkpoint(result["epochs"], result["history"], result["state"])


def restore(model, optimizer, data):
    """(model, optimizer): copies of the given pair, the optimizer bound to
    the copied model's parameters, with the checkpoint's state loaded and the
    model in eval mode."""
    state = decode(data)
    model, optimizer = copy.deepcopy((model, optimizer))  # one memo: the binding survives
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    model.eval()
    return model, optimizer
