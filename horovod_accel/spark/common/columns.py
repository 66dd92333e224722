"""The columns an estimator trains on: which Spark types it takes, and their
checks (on the Spark driver, before any data is written).

A column is one of three kinds:
  scalar  a number: byte, short, int, long, float, double, boolean, decimal
  array   array<number> of one length on every row
  vector  pyspark.ml.linalg.Vector (dense or sparse) of one size on every row
and holds no nulls. Its ColumnInfo records the kind, the Spark type (the
type of a scalar model output in transform()) and the values per row.
Anything else is a ValueError naming the column and what to do.
"""
from dataclasses import dataclass

from pyspark.ml.functions import vector_to_array
from pyspark.ml.linalg import VectorUDT
from pyspark.sql import functions as F
from pyspark.sql import types as T

SCALAR = "scalar"
ARRAY = "array"
VECTOR = "vector"
_NUMERIC = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType,
            T.BooleanType, T.DecimalType)


@dataclass(frozen=True)
class ColumnInfo:
    """One training column. size: values per row (1 for a scalar)."""
    name: str
    kind: str
    spark_type: T.DataType
    size: int = 1

    @property
    def integral(self):
        """True for integer and boolean scalars (predictions are rounded)."""
        return self.kind == SCALAR and isinstance(
            self.spark_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.BooleanType))


def kind_of(name, data_type, role):
    """The kind of a column of `data_type`; ValueError if it is not one."""
    if isinstance(data_type, _NUMERIC):
        return SCALAR
    if isinstance(data_type, VectorUDT):
        return VECTOR
    if isinstance(data_type, T.ArrayType) and isinstance(data_type.elementType, _NUMERIC):
        return ARRAY
    raise ValueError(
        f"{role} column {name!r} has type {data_type.simpleString()}, which the estimator "
        "cannot train on: it takes numbers, arrays of numbers and pyspark.ml vectors. Convert "
        "it first (e.g. StringIndexer for strings, VectorAssembler to combine columns, "
        "F.col(...).cast('double'))")


def check_names(df_columns, role, names):
    """ValueError unless `names` is a non-empty list of columns of the DataFrame."""
    if not names:
        raise ValueError(f"{role} columns are required: set {role.lower()}_cols to a list of "
                         "column names of the DataFrame")
    missing = [n for n in names if n not in df_columns]
    if missing:
        raise ValueError(f"{role} columns {missing} are not in the DataFrame, whose columns "
                         f"are {list(df_columns)}")


def describe(df, feature_cols, label_cols, sample_weight_col=None):
    """{name: ColumnInfo} of the training columns, with sizes and nulls
    checked by one Spark aggregation over df; ValueError naming the column
    otherwise."""
    check_names(df.columns, "Feature", feature_cols)
    check_names(df.columns, "Label", label_cols)
    roles = [(n, "Feature") for n in feature_cols] + [(n, "Label") for n in label_cols]
    if sample_weight_col:
        check_names(df.columns, "Sample weight", [sample_weight_col])
        roles.append((sample_weight_col, "Sample weight"))
    types = {f.name: f.dataType for f in df.schema.fields}
    kinds = {name: kind_of(name, types[name], role) for name, role in roles}
    if sample_weight_col and kinds[sample_weight_col] != SCALAR:
        raise ValueError(f"sample_weight_col {sample_weight_col!r} must be a numeric column, "
                         f"not {types[sample_weight_col].simpleString()}")
    stats = _column_stats(df, kinds)
    infos = {}
    for name, role in roles:
        nulls, low, high = stats[name]
        if nulls:
            raise ValueError(f"{role} column {name!r} has {nulls} null values; drop or fill "
                             "them first (df.dropna(subset=[...]) or df.fillna(...))")
        if low != high:
            raise ValueError(f"{role} column {name!r} holds {kinds[name]}s of different sizes "
                             f"({low} to {high}); every row must have the same size")
        if kinds[name] != SCALAR and low == 0:
            raise ValueError(f"{role} column {name!r} holds empty {kinds[name]}s")
        infos[name] = ColumnInfo(name, kinds[name], types[name], int(low or 1))
    return infos


def _column_stats(df, kinds):
    """{name: (null count, min size, max size)} in one Spark job."""
    aggs = []
    for i, (name, kind) in enumerate(kinds.items()):
        col = F.col(name)
        aggs.append(F.sum(col.isNull().cast("long")).alias(f"n{i}"))
        if kind == SCALAR:
            aggs += [F.lit(1).alias(f"lo{i}"), F.lit(1).alias(f"hi{i}")]
        else:
            size = F.size(vector_to_array(col) if kind == VECTOR else col)
            aggs += [F.min(size).alias(f"lo{i}"), F.max(size).alias(f"hi{i}")]
    row = df.agg(*aggs).collect()[0]
    return {name: (row[f"n{i}"] or 0, row[f"lo{i}"], row[f"hi{i}"])
            for i, name in enumerate(kinds)}


def storage_column(info):
    """The Spark expression that writes `info`'s column to Parquet: vectors
    as array<double>, decimals as double, others unchanged."""
    col = F.col(info.name)
    if info.kind == VECTOR:
        return vector_to_array(col).alias(info.name)
    if isinstance(info.spark_type, T.DecimalType):
        return col.cast("double").alias(info.name)
    if info.kind == ARRAY and isinstance(info.spark_type.elementType, T.DecimalType):
        return col.cast("array<double>").alias(info.name)
    return col
