"""TorchEstimator (upstream's horovod.spark.torch.TorchEstimator): fits a
PyTorch model to a DataFrame with Horovod on Spark. The shared flow is in
horovod_accel/spark/common/estimator.py; the ranks' training loop in
remote.py; the checkpoint format in checkpoint.py."""
from pyspark import keyword_only
from pyspark.ml.param.shared import Param, Params

from horovod_accel.spark.common.estimator import HorovodEstimator
from horovod_accel.spark.torch import checkpoint as ckpt_mod
from horovod_accel.spark.torch import remote
from horovod_accel.spark.torch.model import TorchModel


class TorchEstimator(HorovodEstimator):
    """Spark Estimator that fits a PyTorch model to a DataFrame.

    model: the torch.nn.Module; forward() takes one tensor per feature
        column, in feature_cols order, and returns one output per label.
    optimizer: a torch.optim.Optimizer built on model.parameters(); its
        learning rate is for one process and is scaled by the number of
        processes during training (upstream's rule).
    loss: a loss function f(output, label) or a list, one per label
        (label tensors are float32, as upstream: use `label.long()` for
        class indices); loss_constructors: functions of no arguments that
        return them instead. loss_weights: per-label weights (default equal).
    metrics: metric groups: a list of functions f(output, label) -> number,
        or of lists of them (one per label); averaged over all rows.
    feature_cols, label_cols: DataFrame columns (numbers, arrays or vectors).
    input_shapes: per feature column, the shape its batch tensor is reshaped
        to (default [-1, size]: [-1, 1] for a number). label_shapes: the same
        for labels (default: the output's shape when it has as many values).
    validation: a fraction in [0, 1) or a column whose true/nonzero rows
        are the validation rows. sample_weight_col: per-row loss weights.
    batch_size (32), val_batch_size, epochs (1), train_steps_per_epoch,
    validation_steps_per_epoch, shuffle (True), shuffle_buffer_size (rows;
    0 turns shuffling off), random_seed, verbose (1), run_id (a second fit
    with the same run_id resumes from its checkpoint), store (required),
    num_proc or backend, gradient_compression, backward_passes_per_step,
    use_gpu, inmemory_cache_all, mp_start_method, partitions_per_process.
    Accepted without effect (Petastorm's reader options):
    train_reader_num_workers, val_reader_num_workers, reader_pool_type,
    compress_sparse_cols. Refused: data_module, train_minibatch_fn,
    transformation_fn, continuous_cols, categorical_cols.
    See docs/spark.md ("Estimators").
    """
    RUN_ID_PREFIX = "pytorch"
    UNSUPPORTED = {
        "data_module": "the data is read with pyarrow (horovod_accel/spark/common/reader.py), "
                       "not through data modules",
        "train_minibatch_fn": "a custom step function is not supported; put the logic in the "
                              "model's forward() and the loss",
    }
    data_module = Param(Params._dummy(), "data_module", "data module class to use when reading "
                        "data")  # noqa: SLF001
    input_shapes = Param(Params._dummy(), "input_shapes", "input layer shapes")  # noqa: SLF001
    loss_constructors = Param(Params._dummy(), "loss_constructors",  # noqa: SLF001
                              "functions that construct the loss")
    train_minibatch_fn = Param(Params._dummy(), "train_minibatch_fn",  # noqa: SLF001
                               "functions that construct the minibatch train function for torch")

    @keyword_only
    def __init__(self, num_proc=None, data_module=None, model=None, backend=None, store=None,
                 optimizer=None, loss=None, loss_constructors=None, metrics=None,
                 loss_weights=None, sample_weight_col=None, gradient_compression=None,
                 feature_cols=None, continuous_cols=None, categorical_cols=None,
                 input_shapes=None, validation=None, label_cols=None, callbacks=None,
                 batch_size=None, val_batch_size=None, epochs=None, verbose=1, random_seed=None,
                 shuffle_buffer_size=None, shuffle=True, partitions_per_process=None, run_id=None,
                 train_minibatch_fn=None, train_steps_per_epoch=None,
                 validation_steps_per_epoch=None, transformation_fn=None,
                 train_reader_num_workers=None, val_reader_num_workers=None,
                 reader_pool_type="thread", label_shapes=None, inmemory_cache_all=False,
                 use_gpu=True, mp_start_method=None, backward_passes_per_step=1):
        super().__init__()
        self._setDefault(data_module=None, loss_constructors=None, input_shapes=None,
                         train_minibatch_fn=None)
        kwargs = self._input_kwargs
        if kwargs.get("loss") is not None and kwargs.get("loss_constructors") is not None:
            raise ValueError("only one of loss_constructors and loss parameters can be specified.")
        if backward_passes_per_step <= 0:
            raise ValueError("backward_passes_per_step must be > 0")
        self.setParams(**{k: v for k, v in kwargs.items() if v is not None})

    def setDataModule(self, value):  # noqa: N802 - upstream's names
        return self._set(data_module=value)

    def getDataModule(self):  # noqa: N802
        return self.getOrDefault(self.data_module)

    def setTrainMinibatchFn(self, value):  # noqa: N802
        return self._set(train_minibatch_fn=value)

    def getTrainMinibatchFn(self):  # noqa: N802
        return self.getOrDefault(self.train_minibatch_fn)

    def setInputShapes(self, value):  # noqa: N802
        return self._set(input_shapes=value)

    def getInputShapes(self):  # noqa: N802
        return self.getOrDefault(self.input_shapes)

    def setLossConstructors(self, value):  # noqa: N802
        return self._set(loss_constructors=value)

    def getLossConstructors(self):  # noqa: N802
        return self.getOrDefault(self.loss_constructors)

    # ---- hooks of HorovodEstimator ----

    def _check_framework_params(self):
        import torch  # noqa: PLC0415
        model, optimizer = self.getModel(), self.getOptimizer()
        if not isinstance(model, torch.nn.Module):
            raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise ValueError("optimizer is required: a torch.optim.Optimizer built on "
                             f"model.parameters(); got {type(optimizer).__name__}")
        own = {id(p) for p in model.parameters()}
        if any(id(p) not in own for g in optimizer.param_groups for p in g["params"]):
            raise ValueError("the optimizer's parameters are not the model's: build it as "
                             "optimizer_cls(model.parameters(), ...) on the same model object")
        if self.getLoss() is None and self.getLossConstructors() is None:
            raise ValueError("loss is required: a loss function f(output, label), or a list "
                             "with one per label column (or loss_constructors)")
        if self.getLoss() is not None and self.getLossConstructors() is not None:
            raise ValueError("only one of loss_constructors and loss parameters can be specified.")
        if self.getBackwardPassesPerStep() < 1:
            raise ValueError("backward_passes_per_step must be > 0")

    def _check_metadata_compatibility(self, metadata):
        _check_shapes("input_shapes", self.getInputShapes(), self.getFeatureCols(), metadata)
        _check_shapes("label_shapes", self.getLabelShapes(), self.getLabelCols(), metadata)

    def _load_checkpoint(self, store, run_id):
        return ckpt_mod.load(store, run_id, self.getModel(), self.getOptimizer())

    def _run(self, backend, data, run_files, checkpoint, metadata):
        labels = self.getLabelCols()
        spec = remote.TrainSpec(
            model=self.getModel(), optimizer=self.getOptimizer(),
            resume=None if checkpoint is None else checkpoint.state,
            loss_fns=_to_list(self.getLoss(), len(labels), "loss"),
            loss_constructors=_to_list(self.getLossConstructors(), len(labels),
                                       "loss_constructors"),
            loss_weights=self.getLossWeights() or [1.0 / len(labels)] * len(labels),
            metric_groups=_metric_groups(self.getMetrics()),
            input_shapes=self._input_shapes(metadata), label_shapes=self.getLabelShapes(),
            gradient_compression=self.getGradientCompression(),
            backward_passes_per_step=self.getBackwardPassesPerStep(), epochs=self.getEpochs(),
            use_gpu=self.getUseGpu(), random_seed=self.getRandomSeed(),
            mp_start_method=self.getMpStartMethod(), verbose=self.getVerbose(), data=data,
            run=run_files)
        results = backend.run(remote.train, args=(spec,))
        return ckpt_mod.from_result(results[0])

    def _to_model(self, checkpoint, run_id, metadata):
        model, optimizer = ckpt_mod.restore(self.getModel(), self.getOptimizer(),
                                            checkpoint.state)
        return TorchModel(history=checkpoint.history, model=model, optimizer=optimizer,
                          feature_columns=list(self.getFeatureCols()),
                          input_shapes=self._input_shapes(metadata),
                          label_columns=list(self.getLabelCols()), run_id=run_id,
                          _metadata=metadata, loss=self.getLoss(),
                          loss_constructors=self.getLossConstructors())

    def _input_shapes(self, metadata):
        shapes = self.getInputShapes()
        if shapes:
            return [list(s) for s in shapes]
        return [[-1, metadata[c].size] for c in self.getFeatureCols()]


def _check_shapes(param, shapes, cols, metadata):
    """ValueError unless every shape holds its column's values per row."""
    if not shapes:
        return
    if len(shapes) != len(cols):
        raise ValueError(f"{param} has {len(shapes)} shapes for {len(cols)} columns {cols}")
    for col, shape in zip(cols, shapes):
        values = 1
        for d in shape:
            values *= d
        if abs(values) != metadata[col].size:
            raise ValueError(f"{param}: shape {list(shape)} of column {col!r} holds "
                             f"{abs(values)} values per row, but the column has "
                             f"{metadata[col].size}; make them agree")


def _to_list(value, length, name):
    """None, or `value` as a list of `length` (one item is repeated)."""
    if value is None:
        return None
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(items) == 1:
        return items * length
    if len(items) != length:
        raise ValueError(f"{name} has {len(items)} items for {length} label columns: give one, "
                         "or one per label")
    return items


def _metric_groups(metrics):
    """Upstream's metric groups: every entry a list of functions (one, used
    for every label, or one per label); a bare function is a group of one."""
    return [list(m) if isinstance(m, (list, tuple)) else [m] for m in metrics or []]
