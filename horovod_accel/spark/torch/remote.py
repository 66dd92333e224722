"""TorchEstimator's training function: `train(spec)` runs in every rank of
the horovod.spark.run job and returns, on rank 0, the final checkpoint
({"epochs", "history", "state"}), None elsewhere.

A rank: init Horovod; take the model and optimizer (pickled together, so
the optimizer holds the model's parameters) or the checkpoint to resume;
scale the learning rate by size; broadcast rank 0's parameters and
optimizer state; wrap the optimizer in hvd.DistributedOptimizer; then per
epoch, from the first not yet done: the same number of steps on every rank
over its own shard (DataSpec), a validation pass, the metrics averaged over
all rows of all ranks (one allreduce per phase), and on rank 0 the
checkpoint and history written to the run's folder.

History entries have upstream's form: {"epoch": e, "train": {"loss": x,
"all_metrics": [{"group_<i>_<label>": y, ...}, ...]}, "validation": {...}}.
"""
import multiprocessing
from dataclasses import dataclass

import numpy as np

from horovod_accel.spark.common.training import DataSpec, RunFiles
from horovod_accel.spark.torch import checkpoint as ckpt_mod


@dataclass
class TrainSpec:
    model: object
    optimizer: object            # built on model.parameters()
    resume: object               # None, or the bytes of the checkpoint to resume
    loss_fns: object             # one per label, or None (then loss_constructors)
    loss_constructors: object
    loss_weights: list
    metric_groups: list
    input_shapes: list
    label_shapes: object
    gradient_compression: object
    backward_passes_per_step: int
    epochs: int
    use_gpu: bool
    random_seed: object
    mp_start_method: object
    verbose: int
    data: DataSpec
    run: RunFiles


def train(spec):
    import torch  # noqa: PLC0415

    import horovod.torch as hvd  # noqa: PLC0415
    if spec.mp_start_method:
        multiprocessing.set_start_method(spec.mp_start_method, force=True)
    hvd.init()
    if spec.random_seed is not None:
        torch.manual_seed(spec.random_seed)
    device = _device(spec.use_gpu, hvd)
    model, optimizer = spec.model, spec.optimizer
    model.to(device)
    first_epoch, history = 0, []
    if spec.resume is not None:
        state = ckpt_mod.decode(spec.resume)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        first_epoch, history = int(state.get("epoch", 0)), list(state.get("history", []))
    for group in optimizer.param_groups:
        group["lr"] = group["lr"] * hvd.size()
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    kwargs = {"compression": spec.gradient_compression} if spec.gradient_compression else {}
    optimizer = hvd.DistributedOptimizer(
        optimizer, named_parameters=model.named_parameters(),
        backward_passes_per_step=spec.backward_passes_per_step, **kwargs)
    loss_fns = spec.loss_fns or [make() for make in spec.loss_constructors]
    step = _Step(spec, model, optimizer, loss_fns, device)
    train_batches, train_sizes = spec.data.train_batches(hvd.rank(), hvd.size(), first_epoch)
    val = spec.data.val_batches(hvd.rank(), hvd.size())
    if hvd.rank() == 0 and spec.verbose:
        print(f"Training epochs {first_epoch}..{spec.epochs - 1}: {len(train_sizes)} steps of "
              f"{spec.data.batch_size} rows per epoch on each of {hvd.size()} processes",
              flush=True)
    for epoch in range(first_epoch, spec.epochs):
        model.train()
        sums = _Sums(spec.metric_groups, spec.data.label_cols)
        for n in train_sizes:
            outputs, labels, loss = step.train(train_batches.take(n))
            sums.add(outputs, labels, loss, n)
        record = {"epoch": epoch, "train": sums.average(hvd, "train")}
        if val is not None:
            model.eval()
            val_batches, val_sizes = val
            sums = _Sums(spec.metric_groups, spec.data.label_cols)
            with torch.no_grad():
                for n in val_sizes:
                    outputs, labels, loss = step.evaluate(val_batches.take(n))
                    sums.add(outputs, labels, loss, n)
            record["validation"] = sums.average(hvd, "validation")
        history.append(record)
        if hvd.rank() == 0:
            if spec.verbose:
                print(f"epoch {epoch}: {record}", flush=True)
            if spec.run.checkpoint is not None:
                spec.run.write(spec.run.checkpoint,
                               ckpt_mod.encode(model, optimizer, hvd.size(), epoch + 1, history))
                spec.run.write_history(history)
    if hvd.rank() != 0:
        return None
    return {"epochs": spec.epochs, "history": history,
            "state": ckpt_mod.encode(model, optimizer, hvd.size(), spec.epochs, history)}


def _device(use_gpu, hvd):
    """cuda:<the GPU Spark gave the task, else local_rank> when use_gpu and
    CUDA is available, else the CPU."""
    import torch  # noqa: PLC0415

    from horovod_accel.spark.task import get_available_devices  # noqa: PLC0415
    if not (use_gpu and torch.cuda.is_available()):
        return torch.device("cpu")
    assigned = get_available_devices()
    index = int(assigned[0]) if assigned else hvd.local_rank()
    torch.cuda.set_device(index)
    return torch.device("cuda", index)


class _Step:
    """One training or validation step on a batch ({column: array})."""

    def __init__(self, spec, model, optimizer, loss_fns, device):
        self.spec, self.model, self.optimizer = spec, model, optimizer
        self.loss_fns, self.device = loss_fns, device
        self.passes = 0

    def _tensors(self, batch):
        import torch  # noqa: PLC0415
        data = self.spec.data

        def tensor(name):   # a float32 copy: the batch's arrays may be read-only views
            return torch.from_numpy(np.array(batch[name], dtype=np.float32)).to(self.device)
        inputs = [tensor(c).reshape(shape)
                  for c, shape in zip(data.feature_cols, self.spec.input_shapes)]
        labels = [tensor(c) for c in data.label_cols]
        weights = tensor(data.sample_weight_col) if data.sample_weight_col else None
        return inputs, labels, weights

    def _forward(self, batch):
        inputs, labels, weights = self._tensors(batch)
        outputs = self.model(*inputs)
        outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        shapes = self.spec.label_shapes
        if shapes:
            labels = [y.reshape(s) for y, s in zip(labels, shapes)]
        else:   # as upstream: a label takes its output's shape when the sizes agree
            labels = [y.reshape(o.shape) if o.shape.numel() == y.shape.numel() else y
                      for y, o in zip(labels, outputs)]
        losses = []
        for out, y, fn, w in zip(outputs, labels, self.loss_fns, self.spec.loss_weights):
            if weights is None:
                losses.append(fn(out, y) * w)
            else:   # upstream's: per-row losses times the rows' weights, averaged
                losses.append((fn(out, y, reduction="none").flatten() * weights).mean() * w)
        return outputs, labels, sum(losses)

    def train(self, batch):
        """Forward and backward; the optimizer steps after every
        backward_passes_per_step passes (counted across epochs)."""
        per_step = self.spec.backward_passes_per_step
        if self.passes % per_step == 0:
            self.optimizer.zero_grad()
        outputs, labels, loss = self._forward(batch)
        (loss / per_step if per_step > 1 else loss).backward()
        self.passes += 1
        if self.passes % per_step == 0:
            self.optimizer.step()
        return outputs, labels, loss.detach()

    def evaluate(self, batch):
        return self._forward(batch)


class _Sums:
    """Row-weighted sums of the loss and metrics of one phase of an epoch."""

    def __init__(self, metric_groups, label_cols):
        self.groups, self.labels = metric_groups, label_cols
        self.loss = 0.0
        self.metrics = [[0.0] * len(label_cols) for _ in metric_groups]
        self.rows = 0

    def add(self, outputs, labels, loss, n):
        self.loss += float(loss) * n
        for g, fns in enumerate(self.groups):
            fns = fns * len(outputs) if len(fns) == 1 else fns
            for i, (fn, out, y) in enumerate(zip(fns, outputs, labels)):
                self.metrics[g][i] += float(fn(out.detach(), y)) * n
        self.rows += n

    def average(self, hvd, phase):
        """The averages over every row of every rank (one allreduce)."""
        import torch  # noqa: PLC0415
        flat = [self.loss] + [v for group in self.metrics for v in group] + [self.rows]
        total = hvd.allreduce(torch.tensor(flat, dtype=torch.float64), op=hvd.Sum,
                              name=f"horovod.spark.metrics.{phase}").tolist()
        rows = max(total[-1], 1.0)
        values = iter(total[1:-1])
        return {"loss": total[0] / rows,
                "all_metrics": [{f"group_{g}_{label}": next(values) / rows
                                 for label in self.labels} for g in range(len(self.groups))]}
