"""KerasEstimator (upstream's horovod.spark.keras.KerasEstimator) for Keras 3:
fits a Keras model to a DataFrame with Horovod on Spark. The shared flow is
in horovod_accel/spark/common/estimator.py; the ranks' training in
remote.py; the checkpoint files in checkpoint.py."""
from pyspark import keyword_only
from pyspark.ml.param.shared import Param, Params

from horovod_accel.spark.common.estimator import HorovodEstimator
from horovod_accel.spark.common.training import Checkpoint
from horovod_accel.spark.keras import checkpoint as ckpt_mod
from horovod_accel.spark.keras import remote
from horovod_accel.spark.keras.model import KerasModel


class KerasEstimator(HorovodEstimator):
    """Spark Estimator that fits a Keras 3 model to a DataFrame.

    model: a keras.Model with one input per feature column (feature_cols
        order) and one output per label column; compiled here with
        optimizer (default: the model's own, if compiled), loss (required:
        one, or a list per output), loss_weights and metrics.
    optimizer: a Keras optimizer; its learning rate is for one process and
        is scaled by the number of processes during training (upstream's
        rule; a LearningRateSchedule is not scaled).
    custom_objects: custom classes/functions the model needs to load.
    callbacks: Keras callbacks for every process's model.fit (after
        Horovod's broadcast and metric-averaging callbacks).
    backend_env: extra environment variables for the training processes.
    The data params (feature_cols, label_cols, validation, batch_size,
    epochs, shuffle, run_id, store, ...) are TorchEstimator's; see
    docs/spark.md ("Estimators"). Refused: data_module, checkpoint_callback,
    transformation_fn, continuous_cols, categorical_cols.
    """
    RUN_ID_PREFIX = "keras"
    UNSUPPORTED = {
        "data_module": "the data is read with pyarrow (horovod_accel/spark/common/reader.py), "
                       "not through data modules",
        "checkpoint_callback": "the estimator writes its own checkpoint after every epoch "
                               "(runs/<run_id>/checkpoint.keras), which resuming needs; pass "
                               "other checkpoint callbacks in callbacks",
    }
    custom_objects = Param(Params._dummy(), "custom_objects", "custom objects")  # noqa: SLF001
    checkpoint_callback = Param(Params._dummy(), "checkpoint_callback",  # noqa: SLF001
                                "model checkpointing callback")
    data_module = Param(Params._dummy(), "data_module",  # noqa: SLF001
                        "data module class to use when reading data")
    backend_env = Param(Params._dummy(), "backend_env",  # noqa: SLF001
                        "dict to add to the environment of the command run on the environment")

    @keyword_only
    def __init__(self, num_proc=None, data_module=None, model=None, backend=None, store=None,
                 custom_objects=None, optimizer=None, loss=None, loss_weights=None,
                 sample_weight_col=None, gradient_compression=None, metrics=None,
                 feature_cols=None, label_cols=None, continuous_cols=None,
                 categorical_cols=None, validation=None, callbacks=None, batch_size=None,
                 val_batch_size=None, epochs=None, verbose=None, random_seed=None,
                 shuffle_buffer_size=None, shuffle=True, partitions_per_process=None,
                 run_id=None, train_steps_per_epoch=None, validation_steps_per_epoch=None,
                 transformation_fn=None, train_reader_num_workers=None,
                 val_reader_num_workers=None, reader_pool_type="thread", label_shapes=None,
                 checkpoint_callback=None, inmemory_cache_all=False, backend_env=None,
                 use_gpu=True, mp_start_method=None, tensorflow_dataset_prefetch_buffer_size=0):
        super().__init__()
        self._setDefault(data_module=None, custom_objects={}, checkpoint_callback=None,
                         backend_env={})
        self.setParams(**{k: v for k, v in self._input_kwargs.items() if v is not None})

    def setCustomObjects(self, value):  # noqa: N802 - upstream's names
        return self._set(custom_objects=value)

    def getCustomObjects(self):  # noqa: N802
        return self.getOrDefault(self.custom_objects)

    def setCheckpointCallback(self, value):  # noqa: N802
        return self._set(checkpoint_callback=value)

    def getCheckpointCallback(self):  # noqa: N802
        return self.getOrDefault(self.checkpoint_callback)

    def setBackendEnv(self, value):  # noqa: N802
        return self._set(backend_env=value)

    def getBackendEnv(self):  # noqa: N802
        return self.getOrDefault(self.backend_env)

    def setDataModule(self, value):  # noqa: N802
        return self._set(data_module=value)

    def getDataModule(self):  # noqa: N802
        return self.getOrDefault(self.data_module)

    def get_model_shapes(self):
        """(input shapes, output shapes) of the model, -1 for unknown dims."""
        model = self.getModel()
        return ([[d if d else -1 for d in t.shape] for t in model.inputs],
                [[d if d else -1 for d in t.shape] for t in model.outputs])

    # ---- hooks of HorovodEstimator ----

    def _check_framework_params(self):
        import keras  # noqa: PLC0415
        model = self.getModel()
        if not isinstance(model, keras.Model):
            raise ValueError(f"model has to be an instance of keras.Model (Keras 3), got "
                             f"{type(model).__name__}")
        if not model.inputs:
            raise ValueError("the model has no defined inputs: build it with keras.Input (a "
                             "functional or Sequential model with an Input layer)")
        if not self.getLoss():
            raise ValueError("Loss parameter is required for the model to compile")
        if self.getOptimizer() is None and getattr(model, "optimizer", None) is None:
            raise ValueError("Optimizer must be provided either as a parameter or as part of a "
                             "compiled model")

    def _check_metadata_compatibility(self, metadata):
        inputs, outputs = self.get_model_shapes()
        features, labels = self.getFeatureCols(), self.getLabelCols()
        if len(inputs) != len(features):
            raise ValueError(f"the model has {len(inputs)} inputs but there are "
                             f"{len(features)} feature columns {features}: give one per input")
        if len(outputs) != len(labels):
            raise ValueError(f"the model has {len(outputs)} outputs but there are {len(labels)} "
                             f"label columns {labels}: give one per output")
        for col, shape in zip(features, inputs):
            values = 1
            for d in shape[1:]:
                values *= d
            if values != metadata[col].size:
                raise ValueError(f"feature column {col!r} has {metadata[col].size} values per "
                                 f"row, but its model input has shape {shape[1:]} (-1: unknown, "
                                 "which the estimator cannot fill): make them agree")

    def _load_checkpoint(self, store, run_id):
        return ckpt_mod.load(store, run_id)

    def _run(self, backend, data, run_files, checkpoint, metadata):
        spec = remote.TrainSpec(
            model=self._compiled_model() if checkpoint is None else checkpoint.state,
            first_epoch=0 if checkpoint is None else checkpoint.epochs,
            history={} if checkpoint is None else checkpoint.history,
            custom_objects=self.getCustomObjects(), callbacks=list(self.getCallbacks() or []),
            gradient_compression=self.getGradientCompression(), epochs=self.getEpochs(),
            use_gpu=self.getUseGpu(), random_seed=self.getRandomSeed(),
            mp_start_method=self.getMpStartMethod(), verbose=self.getVerbose(), data=data,
            run=run_files)
        results = backend.run(remote.train, args=(spec,), env=self.getBackendEnv())
        result = results[0]
        return Checkpoint(result["epochs"], result["history"], result["state"])

    def _compiled_model(self):
        """The model compiled with the estimator's params, as bytes."""
        model = self.getModel()
        optimizer = self.getOptimizer() or model.optimizer
        model.compile(optimizer=optimizer, loss=self.getLoss(),
                      loss_weights=self.getLossWeights(), metrics=self.getMetrics() or None)
        # Built, so that the file holds all its variables (momenta, ...) and
        # the ranks load it whole.
        if not model.optimizer.built:
            model.optimizer.build(model.trainable_variables)
        return ckpt_mod.model_bytes(model)

    def _to_model(self, checkpoint, run_id, metadata):
        import keras  # noqa: PLC0415
        custom_objects = self.getCustomObjects()
        with keras.utils.custom_object_scope(custom_objects):
            model = ckpt_mod.load_model(checkpoint.state, keras.models.load_model,
                                        custom_objects=custom_objects)
        return KerasModel(history=checkpoint.history, model=model,
                          feature_columns=list(self.getFeatureCols()),
                          label_columns=list(self.getLabelCols()), custom_objects=custom_objects,
                          run_id=run_id, _metadata=metadata, _floatx=keras.backend.floatx())
