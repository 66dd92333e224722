"""HorovodEstimator and HorovodModel (upstream's
horovod.spark.common.estimator): the flow of fit() and transform() that the
torch and keras estimators share; a framework supplies the hooks.

fit(df), on the Spark driver:
 1. params checked (ValueError naming the param and what to do), the store
    writable, the columns numeric and null-free (columns.py), before any
    data is written;
 2. run_id (default `<framework>_<unix time>`); if runs/<run_id> holds a
    checkpoint, training resumes from it: the epochs it completed are not run
    again and its history continues (all done: no training at all);
 3. the DataFrame is written as Parquet into the store (dataset.py);
 4. the framework's training function runs on num_proc ranks through the
    backend (horovod.spark.run); each rank reads its own shard
    (NOTE [Shards]); rank 0 checkpoints every epoch and returns the final
    state;
 5. the Model wraps the trained model; its transform(df) adds one prediction
    column per label, `<label>__output` (transform.py).
"""
import abc
import time

from pyspark.ml import Estimator, Model

from horovod_accel.spark.common import columns as columns_mod
from horovod_accel.spark.common import dataset, reader, training, transform
from horovod_accel.spark.common.backend import SparkBackend
from horovod_accel.spark.common.params import EstimatorParams, ModelParams
from horovod_accel.spark.common.store import Store

# Upstream params that need Petastorm or NVTabular: refused when set.
_UNSUPPORTED = {
    "transformation_fn": "Petastorm's TransformSpec is not used here (pyarrow readers); "
                         "transform the DataFrame before fit()",
    "transformation_edit_fields": "Petastorm's TransformSpec is not used here",
    "transformation_removed_fields": "Petastorm's TransformSpec is not used here",
    "continuous_cols": "NVTabular data modules are not supported; use feature_cols",
    "categorical_cols": "NVTabular data modules are not supported; use feature_cols",
}
_MP_START_METHODS = (None, "fork", "spawn", "forkserver")


class HorovodEstimator(Estimator, EstimatorParams):
    """The estimator's flow (module docstring). Subclasses set RUN_ID_PREFIX
    and UNSUPPORTED ({param: why}) and implement the hooks below."""
    RUN_ID_PREFIX = "horovod"
    UNSUPPORTED = {}

    def fit(self, df, params=None):
        """Fits the model to DataFrame `df` (params: an optional param map
        that overrides the embedded params); returns the HorovodModel
        transformer wrapping the trained model."""
        return super().fit(df, params)

    # ---- hooks ----

    @abc.abstractmethod
    def _check_framework_params(self):
        """ValueError for a framework param that is wrong or missing."""

    @abc.abstractmethod
    def _check_metadata_compatibility(self, metadata):
        """ValueError when the columns (ColumnInfo) do not fit the model."""

    @abc.abstractmethod
    def _load_checkpoint(self, store, run_id):
        """The run's Checkpoint in the store, or None."""

    @abc.abstractmethod
    def _run(self, backend, data, run_files, checkpoint, metadata):
        """Trains on the ranks (from `checkpoint` when not None); returns the
        final Checkpoint (rank 0's)."""

    @abc.abstractmethod
    def _to_model(self, checkpoint, run_id, metadata):
        """The HorovodModel of a final Checkpoint."""

    # ---- the flow ----

    def _fit(self, df):
        self._check_params()
        store = self.getStore()
        store.check_writable()
        backend = self._get_or_create_backend()
        metadata = columns_mod.describe(df, self.getFeatureCols(), self.getLabelCols(),
                                        self.getSampleWeightCol())
        self._check_metadata_compatibility(metadata)
        run_id = self.getRunId() or f"{self.RUN_ID_PREFIX}_{int(time.time())}"
        checkpoint = self._load_checkpoint(store, run_id) if store.saving_runs() else None
        verbose = self.getVerbose()
        if checkpoint is not None and verbose:
            print(f"horovod.spark: resuming run {run_id!r} after epoch {checkpoint.epochs} "
                  f"from {store.get_checkpoint_path(run_id)}", flush=True)
        if checkpoint is not None and checkpoint.epochs >= self.getEpochs():
            return self._to_model(checkpoint, run_id, metadata)
        with dataset.prepare(store, df, metadata, self.getValidation(),
                             backend.num_processes(), self.getPartitionsPerProcess(),
                             seed=self.getRandomSeed() or 0, verbose=verbose) as data:
            final = self._run(backend, self._data_spec(data, metadata),
                              training.RunFiles.of(store, run_id), checkpoint, metadata)
        return self._to_model(final, run_id, metadata)

    def _data_spec(self, data, metadata):
        batch_size = self.getBatchSize()
        return training.DataSpec(
            store=self.getStore(), train_path=data.train_path, val_path=data.val_path,
            infos=metadata, feature_cols=list(self.getFeatureCols()),
            label_cols=list(self.getLabelCols()), sample_weight_col=self.getSampleWeightCol(),
            batch_size=batch_size, val_batch_size=self.getValBatchSize() or batch_size,
            train_steps_per_epoch=self.getTrainStepsPerEpoch(),
            validation_steps_per_epoch=self.getValidationStepsPerEpoch(),
            buffer_rows=reader.shuffle_buffer_rows(self.getShuffle(),
                                                   self.getShufflingBufferSize(),
                                                   data.avg_row_bytes),
            seed=self.getRandomSeed(), cache=self.getInMemoryCacheAll())

    def _get_or_create_backend(self):
        backend = self.getBackend()
        if backend is None:
            return SparkBackend(self.getNumProc(), verbose=self.getVerbose())
        if self.getNumProc() is not None:
            raise ValueError('At most one of parameters "backend" and "num_proc" may be '
                             'specified')
        return backend

    def _check_params(self):
        for name, why in {**_UNSUPPORTED, **self.UNSUPPORTED}.items():
            if self.getOrDefault(name) is not None:
                raise ValueError(f"{name} is not supported by horovod_accel's estimators: {why}")
        if self.getModel() is None:
            raise ValueError("model is required: the model to train")
        store = self.getStore()
        if not isinstance(store, Store):
            raise ValueError(f"store is required, a horovod.spark.common.store.Store (e.g. "
                             f"Store.create('/tmp/horovod')); got {store!r}")
        if not self.getFeatureCols():
            raise ValueError("feature_cols is required: the DataFrame columns the model takes")
        if not self.getLabelCols():
            raise ValueError("label_cols is required: the DataFrame columns the model predicts")
        for name in ("batch_size", "epochs", "partitions_per_process"):
            _positive(name, self.getOrDefault(name))
        for name in ("val_batch_size", "train_steps_per_epoch", "validation_steps_per_epoch"):
            if self.getOrDefault(name) is not None:
                _positive(name, self.getOrDefault(name))
        if (self.getShufflingBufferSize() or 0) < 0:
            raise ValueError(f"shuffle_buffer_size must be >= 0 (0: no shuffling), got "
                             f"{self.getShufflingBufferSize()}")
        dataset.check_validation(self.getValidation())
        weights = self.getLossWeights()
        if weights and len(weights) != len(self.getLabelCols()):
            raise ValueError(f"loss_weights has {len(weights)} values but there are "
                             f"{len(self.getLabelCols())} label columns: give one per label")
        if self.getMpStartMethod() not in _MP_START_METHODS:
            raise ValueError(f"mp_start_method must be one of {_MP_START_METHODS}, got "
                             f"{self.getMpStartMethod()!r}")
        self._check_framework_params()


def _positive(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


class HorovodModel(Model, ModelParams):
    """A trained model as a Spark Transformer. Subclasses implement
    `_predictor()`: a picklable callable that maps the feature arrays of a
    batch of rows to the model's output arrays (transform.py)."""

    def transform(self, df, params=None):
        """Returns df with one prediction column per label column, named
        `<label>__output` by default (setOutputCols to rename): a number of
        the label's type for a one-value output, else a DenseVector."""
        return super().transform(df, params)

    @abc.abstractmethod
    def _predictor(self):
        """The picklable predict function of the trained model."""

    def _transform(self, df):
        return transform.predict(df, self._predictor(), self.getFeatureColumns(),
                                 self.getLabelColumns(), self.getOutputCols(),
                                 self._get_metadata())
