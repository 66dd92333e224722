"""The pyspark.ml Params of the estimators and models (upstream's
horovod.spark.common.params): the same names, defaults, getters and setters.

Each param is one row of a table: (name, doc, type converter, default,
accessor suffix); `install` makes the pyspark Param and its
get<Suffix>/set<Suffix> methods (setters return self). Upstream's accessor
names are kept, quirks included (getTrainReaderNumWorker,
setShufflingBufferSize, setLabelColoumns).

What each estimator param does here, and which upstream params are accepted
without effect or refused, is in docs/spark.md ("Estimators"); the checks are
in horovod_accel/spark/common/estimator.py.
"""
from pyspark import keyword_only
from pyspark.ml.param.shared import HasOutputCols, Param, Params, TypeConverters

_T = TypeConverters

ESTIMATOR_PARAMS = (
    ("num_proc", "number of processes", None, None, "NumProc"),
    ("train_reader_num_workers", "number of parallel worker processes to read train data",
     None, 2, "TrainReaderNumWorker"),
    ("val_reader_num_workers", "number of parallel worker processes to read validation data",
     None, 2, "ValReaderNumWorker"),
    ("reader_pool_type", "type of worker pool to read data", None, "thread", "ReaderPoolType"),
    ("optimizer", "optimizer", None, None, "Optimizer"),
    ("model", "model", None, None, "Model"),
    ("backend", "backend", None, None, "Backend"),
    ("store", "store", None, None, "Store"),
    ("metrics", "metrics", None, [], "Metrics"),
    ("loss", "loss", None, None, "Loss"),
    ("gradient_compression", "Horovod gradient compression option", None, None,
     "GradientCompression"),
    ("compress_sparse_cols", "flag indicating whether SparseVector columns should be compressed",
     _T.toBoolean, False, "CompressSparseCols"),
    ("loss_weights", "loss weights", _T.toListFloat, None, "LossWeights"),
    ("sample_weight_col", "name of the column containing sample weights", _T.toString, None,
     "SampleWeightCol"),
    ("feature_cols", "feature column names", _T.toListString, None, "FeatureCols"),
    ("label_cols", "label column names", _T.toListString, None, "LabelCols"),
    ("continuous_cols", "continuous column names", _T.toListString, None, "ContinuousCols"),
    ("categorical_cols", "categorical column names", _T.toListString, None, "CategoricalCols"),
    ("validation", "one of: float validation split [0, 1), or string validation column name",
     None, None, "Validation"),
    ("callbacks", "callbacks", None, [], "Callbacks"),
    ("batch_size", "batch size", _T.toInt, 32, "BatchSize"),
    ("val_batch_size", "validation batch size", _T.toInt, None, "ValBatchSize"),
    ("epochs", "epochs", _T.toInt, 1, "Epochs"),
    ("train_steps_per_epoch", "number of training (batches) steps per epoch", _T.toInt, None,
     "TrainStepsPerEpoch"),
    ("validation_steps_per_epoch", "number of steps (batches) for validation per epoch",
     _T.toInt, None, "ValidationStepsPerEpoch"),
    ("random_seed", "random seed to use for DL frameworks", _T.toInt, None, "RandomSeed"),
    ("shuffle_buffer_size", "shuffling buffer size used for training samples, in rows",
     _T.toInt, None, "ShufflingBufferSize"),
    ("shuffle", "whether to shuffle training samples or not", _T.toBoolean, True, "Shuffle"),
    ("verbose", "verbose flag (0=silent, 1=enabled, other values used by frameworks)",
     _T.toInt, 1, "Verbose"),
    ("partitions_per_process", "partitions for parquet form of the DataFrame per process",
     _T.toInt, 10, "PartitionsPerProcess"),
    ("run_id", "unique ID for this run; if the run already exists, training resumes from its "
     "last checkpoint in the store", _T.toString, None, "RunId"),
    ("transformation_fn", "function applied to every batch before train and validation steps",
     None, None, "TransformationFn"),
    ("transformation_edit_fields", "edit fields of petastorm's TransformSpec", None, None,
     "TransformationEditFields"),
    ("transformation_removed_fields", "removed fields of petastorm's TransformSpec", None, None,
     "TransformationRemovedFields"),
    ("label_shapes", "the shape (or shapes) of the label column (or columns)", None, None,
     "LabelShapes"),
    ("inmemory_cache_all", "cache the data in memory for training and validation",
     _T.toBoolean, False, "InMemoryCacheAll"),
    ("use_gpu", "whether to use the GPU for training", _T.toBoolean, True, "UseGpu"),
    ("mp_start_method", "the start method of multiprocessing in the training processes",
     _T.toString, None, "MpStartMethod"),
    ("backward_passes_per_step", "number of backward passes to perform before calling "
     "hvd.allreduce", _T.toInt, 1, "BackwardPassesPerStep"),
    ("tensorflow_dataset_prefetch_buffer_size", "size of the prefetch buffer of the TensorFlow "
     "dataset", _T.toInt, 0, "TensorflowDatasetPrefetchBufferSize"),
)

MODEL_PARAMS = (
    ("history", "history", None, None, "History"),
    ("model", "model", None, None, "Model"),
    ("feature_columns", "feature columns", None, None, "FeatureColumns"),
    ("label_columns", "label columns", None, None, "LabelColumns"),
    ("run_id", "unique ID for the run that generated this model", _T.toString, None, "RunId"),
    ("_metadata", "metadata: the type and shape of every input and output column", None, None,
     None),
)


def install(cls, table):
    """Adds the params of `table` to Params subclass `cls`: a class-level
    Param (pyspark copies it to each instance) and get<Suffix>/set<Suffix>
    methods. Returns the {name: default} of the table."""
    for name, doc, converter, _, suffix in table:
        kwargs = {"typeConverter": converter} if converter else {}
        setattr(cls, name, Param(Params._dummy(), name, doc, **kwargs))  # noqa: SLF001
        if suffix is not None:
            setattr(cls, "get" + suffix, _getter(name))
            setattr(cls, "set" + suffix, _setter(name))
    return {name: default for name, _, _, default, _ in table}


def _getter(name):
    def get(self):
        return self.getOrDefault(getattr(self, name))
    get.__name__ = f"get_{name}"
    get.__doc__ = f"Gets the value of `{name}` or its default."
    return get


def _setter(name):
    def set_(self, value):
        return self._set(**{name: value})
    set_.__name__ = f"set_{name}"
    set_.__doc__ = f"Sets `{name}`; returns self."
    return set_


class EstimatorParams(Params):
    """The params every Horovod estimator has (upstream's names and defaults)."""

    def __init__(self):
        super().__init__()
        self._setDefault(**_ESTIMATOR_DEFAULTS)

    @keyword_only
    def setParams(self, **kwargs):  # noqa: N802 - pyspark's name
        return self._set(**kwargs)


class ModelParams(HasOutputCols):
    """The params every Horovod model has: the trained model, its history,
    its columns and run; outputCols default to `<label>__output`."""

    def __init__(self):
        super().__init__()

    @keyword_only
    def setParams(self, **kwargs):  # noqa: N802 - pyspark's name
        return self._set(**kwargs)

    def setOutputCols(self, value):  # noqa: N802 - pyspark's name
        """Sets the names of the prediction columns, one per label column."""
        return self._set(outputCols=value)

    def setLabelColoumns(self, value):  # noqa: N802 - upstream's (misspelt) name
        return self._set(label_columns=value)

    def _get_metadata(self):
        """{column: ColumnInfo} of the feature and label columns
        (horovod_accel/spark/common/columns.py)."""
        return self.getOrDefault(self._metadata)


_ESTIMATOR_DEFAULTS = install(EstimatorParams, ESTIMATOR_PARAMS)
install(ModelParams, MODEL_PARAMS)
