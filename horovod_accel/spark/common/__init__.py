"""What the Spark estimators (horovod.spark.torch, horovod.spark.keras)
share. Modules, one purpose each:
  store.py      Store / FilesystemStore / LocalStore: where data and runs live
  params.py     the pyspark.ml Params of estimators and models (upstream's)
  backend.py    SparkBackend: runs the training function (horovod.spark.run)
  estimator.py  HorovodEstimator / HorovodModel: the fit and transform flow
  columns.py    which columns can be trained on; their checks (driver)
  dataset.py    the DataFrame written as Parquet into the store (driver)
  shard.py      which rows each rank reads (NOTE [Shards]); pure
  reader.py     a rank's shard as shuffled numpy batches (pyarrow datasets)
  training.py   DataSpec and RunFiles: what every rank's training gets
  transform.py  predictions as new DataFrame columns (Spark tasks)
Needs pyspark, pyarrow and fsspec (scripts/setup_spark.sh installs them).
"""
import importlib.util

_MISSING = [name for name in ("pyarrow", "fsspec") if importlib.util.find_spec(name) is None]
if _MISSING:
    raise ImportError(f"horovod.spark's estimators need {' and '.join(_MISSING)}, which this "
                      f"Python lacks: `pip install {' '.join(_MISSING)}` (or run "
                      "scripts/setup_spark.sh)")
