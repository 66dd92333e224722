"""Model.transform(df): predictions as new columns, computed in the Spark
tasks in batches of rows (no pandas or Arrow UDFs: plain RDD partitions, so
pyspark needs no extra packages on the executors).

The predictor is a picklable callable `predictor(features) -> outputs`:
features is a list (feature column order) of numpy arrays of one batch,
(n,) for a scalar column and (n, size) for an array or vector column;
outputs is a list of arrays with n rows, one per label column. A one-value
output (n, 1) or (n,) becomes a number of the label's type (rounded for an
integer label, as upstream); a wider one a DenseVector (upstream's types).
"""
import numpy as np
from pyspark.ml.linalg import DenseVector, VectorUDT
from pyspark.sql import types as T

from horovod_accel.spark.common import columns as columns_mod

BATCH_ROWS = 256


def predict(df, predictor, feature_cols, label_cols, output_cols, metadata):
    """df with one column per output_cols entry appended (see module)."""
    missing = [c for c in feature_cols if c not in df.columns]
    if missing:
        raise ValueError(f"feature columns {missing} are not in the DataFrame to transform, "
                         f"whose columns are {df.columns}")
    types = {f.name: f.dataType for f in df.schema.fields}
    for name in feature_cols:
        kind = columns_mod.kind_of(name, types[name], "Feature")
        if kind != metadata[name].kind:
            raise ValueError(f"feature column {name!r} is a {kind} here but was a "
                             f"{metadata[name].kind} when the model was trained")
    if len(output_cols) != len(label_cols):
        raise ValueError(f"outputCols {output_cols} must name one column per label column "
                         f"{label_cols}")
    clash = [c for c in output_cols if c in df.columns]
    if clash:
        raise ValueError(f"the DataFrame already has columns {clash}; name the predictions "
                         "otherwise with model.setOutputCols([...])")
    # The kind of each output, from one prediction on zeros on the driver.
    probe = predictor([np.zeros((1,) if metadata[c].kind == columns_mod.SCALAR
                                else (1, metadata[c].size)) for c in feature_cols])
    if len(probe) != len(label_cols):
        raise ValueError(f"the model returns {len(probe)} outputs for {len(label_cols)} label "
                         "columns")
    scalar = [np.asarray(p).size == 1 for p in probe]
    fields = list(df.schema.fields)
    for name, label, is_scalar in zip(output_cols, label_cols, scalar):
        info = metadata[label]
        out_type = info.spark_type if is_scalar and info.kind == columns_mod.SCALAR else (
            T.DoubleType() if is_scalar else VectorUDT())
        fields.append(T.StructField(name, out_type, True))
    cast = [_caster(metadata[label], is_scalar) for label, is_scalar in zip(label_cols, scalar)]
    positions = [df.columns.index(c) for c in feature_cols]
    kinds = [metadata[c].kind for c in feature_cols]

    def predict_partition(rows):
        batch = []
        for row in rows:
            batch.append(row)
            if len(batch) == BATCH_ROWS:
                yield from _predict_batch(predictor, batch, positions, kinds, cast)
                batch = []
        if batch:
            yield from _predict_batch(predictor, batch, positions, kinds, cast)

    return df.sparkSession.createDataFrame(df.rdd.mapPartitions(predict_partition),
                                           T.StructType(fields))


def _caster(label_info, is_scalar):
    """The function that turns one row's prediction into its column value."""
    if not is_scalar:
        return lambda value: DenseVector(np.asarray(value, dtype=np.float64).reshape(-1))
    if label_info.integral:
        if isinstance(label_info.spark_type, T.BooleanType):
            return lambda value: bool(round(float(np.asarray(value).reshape(-1)[0])))
        return lambda value: int(round(float(np.asarray(value).reshape(-1)[0])))
    return lambda value: float(np.asarray(value).reshape(-1)[0])


def _predict_batch(predictor, rows, positions, kinds, cast):
    features = []
    for pos, kind in zip(positions, kinds):
        if kind == columns_mod.VECTOR:
            features.append(np.stack([row[pos].toArray() for row in rows]))
        else:
            features.append(np.asarray([row[pos] for row in rows], dtype=np.float64))
    outputs = [np.asarray(o) for o in predictor(features)]
    for i, row in enumerate(rows):
        yield tuple(row) + tuple(c(o[i]) for c, o in zip(cast, outputs))
