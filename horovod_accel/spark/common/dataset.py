"""Materialises a DataFrame for training (Spark driver): the training
columns, split into training and validation rows, written as Parquet into
the store at dataset index `idx` (store.py tells the paths).

Contract of `prepare`: a context manager that holds index `idx` for the
duration of one fit (a concurrent fit into the same store takes another
index) and yields a PreparedData whose row counts come from the Parquet
footers. A fit of a DataFrame already written by this process (same plan,
columns, split and process count; upstream's training-data cache) reuses
the files; otherwise it overwrites what was at its index. The files stay in
the store after the fit, to be reused or deleted.
"""
import collections
import contextlib
import threading
from dataclasses import dataclass

from pyspark.sql import functions as F
from pyspark.sql import types as T

from horovod_accel.spark.common import columns as columns_mod


@dataclass(frozen=True)
class PreparedData:
    """The Parquet datasets of one fit. val_path is None without validation."""
    idx: int
    train_path: str
    val_path: object
    train_rows: int
    val_rows: int
    avg_row_bytes: float


class _Datasets:
    """The dataset indices of this process's fits, per store, and what was
    written at each (the training-data cache).

    An index is held while a fit uses it; a new dataset takes the lowest
    index no fit holds (overwriting what another key left there). A fit
    whose key (same DataFrame plan, columns, split, process count, store)
    was written before, and still owns its index, reuses those files."""

    def __init__(self):
        self._lock = threading.Lock()
        self._held = collections.Counter()   # (prefix, idx) -> fits holding it
        self._owner = {}                     # (prefix, idx) -> key written there
        self._written = {}                   # key -> PreparedData

    @contextlib.contextmanager
    def hold(self, prefix, key):
        """Yields (idx, the PreparedData cached for key or None)."""
        with self._lock:
            cached = self._written.get(key)
            if cached is not None and self._owner.get((prefix, cached.idx)) == key:
                idx = cached.idx
            else:
                cached, idx = None, 0
                while self._held[(prefix, idx)]:
                    idx += 1
                self._owner[(prefix, idx)] = key
                self._written.pop(key, None)
            self._held[(prefix, idx)] += 1
        try:
            yield idx, cached
        finally:
            with self._lock:
                self._held[(prefix, idx)] -= 1

    def remember(self, key, prepared):
        with self._lock:
            self._written[key] = prepared

    def clear(self):
        with self._lock:
            self._owner.clear()
            self._written.clear()


_DATASETS = _Datasets()


def clear_training_cache():
    """Forgets the Parquet datasets written by earlier fits of this process
    (upstream's util.clear_training_cache): the next fit writes its own.
    The files stay in the store."""
    _DATASETS.clear()


def check_validation(validation, df_columns=None):
    """ValueError unless validation is None, a fraction in [0, 1) or a
    column of the DataFrame."""
    if validation is None or validation == 0:
        return
    if isinstance(validation, float):
        if not 0 <= validation < 1:
            raise ValueError(f"validation={validation} must be a fraction in [0, 1)")
    elif isinstance(validation, str):
        if df_columns is not None and validation not in df_columns:
            raise ValueError(f"validation column {validation!r} is not in the DataFrame, whose "
                             f"columns are {list(df_columns)}")
    else:
        raise ValueError(f"validation must be a float fraction in [0, 1) or the name of a column "
                         f"whose true/nonzero rows are the validation rows; got "
                         f"{type(validation).__name__} {validation!r}")


def split(df, validation, seed):
    """(train_df, val_df or None). A fraction splits at random (seeded, so a
    second fit of the same DataFrame splits it the same way); a column
    selects the rows where it is true or nonzero, and is dropped."""
    if not validation:
        return df, None
    if isinstance(validation, float):
        train, val = df.randomSplit([1.0 - validation, validation], seed=seed)
        return train, val
    is_bool = isinstance(df.schema[validation].dataType, T.BooleanType)
    selected = F.col(validation) if is_bool else F.col(validation) != 0
    return (df.filter(~selected).drop(validation), df.filter(selected).drop(validation))


@contextlib.contextmanager
def prepare(store, df, infos, validation, num_proc, partitions_per_process, seed=0, verbose=0):
    """Writes df's columns `infos` (ColumnInfo by name, in training order)
    into the store and yields a PreparedData (see the module's contract).
    ValueError when a split holds fewer rows than num_proc."""
    check_validation(validation, df.columns)
    if partitions_per_process < 1:
        raise ValueError(f"partitions_per_process must be >= 1, got {partitions_per_process}")
    selected = [columns_mod.storage_column(info) for info in infos.values()]
    if isinstance(validation, str):
        selected.append(F.col(validation))
    key = (store.prefix_path, df.semanticHash(), tuple(infos.items()), validation, seed, num_proc,
           partitions_per_process)
    with _DATASETS.hold(store.prefix_path, key) as (idx, cached):
        if cached is not None and store.is_parquet_dataset(cached.train_path):
            if verbose:
                print(f"horovod.spark: reusing the {cached.train_rows} training rows at "
                      f"{cached.train_path} (written by an earlier fit of this DataFrame)",
                      flush=True)
            yield cached
            return
        train_df, val_df = split(df.select(*selected), validation, seed)
        # Files per split: partitions_per_process per process in all (fewer
        # for a column split, whose size is not known before writing).
        frac = validation if isinstance(validation, float) else 0.0
        partitions = num_proc * partitions_per_process
        train_path = store.get_train_data_path(idx)
        val_path = store.get_val_data_path(idx) if val_df is not None else None
        _write(train_df, train_path, max(int(partitions * (1 - frac)), num_proc), verbose)
        train_rows, row_bytes = _count(store, train_path)
        if train_rows < num_proc:
            raise ValueError(f"the training split has {train_rows} rows, fewer than num_proc="
                             f"{num_proc}: every process needs at least one")
        val_rows = 0
        if val_df is not None:
            _write(val_df, val_path, max(int(partitions * frac), num_proc), verbose)
            val_rows, _ = _count(store, val_path)
            if val_rows < num_proc:
                raise ValueError(f"validation={validation!r} selects {val_rows} rows, fewer "
                                 f"than num_proc={num_proc}: every process validates on its "
                                 "own rows, so give it at least one each")
        else:
            store.delete(store.get_val_data_path(idx))   # what an earlier fit left there
        if verbose:
            print(f"horovod.spark: {train_rows} training rows at {train_path}, {val_rows} "
                  f"validation rows" + (f" at {val_path}" if val_path else ""), flush=True)
        prepared = PreparedData(idx, train_path, val_path, train_rows, val_rows, row_bytes)
        _DATASETS.remember(key, prepared)
        yield prepared


def _write(df, path, partitions, verbose):
    # repartition: rows are dealt round-robin over the files, so that every
    # process's shard (contiguous rows, shard.py) is a sample of the whole
    # DataFrame even when it is sorted (e.g. by label).
    if verbose >= 2:
        print(f"horovod.spark: writing {partitions} Parquet partitions to {path}", flush=True)
    df.repartition(partitions).write.mode("overwrite").parquet(path)


def _count(store, path):
    """(rows, average uncompressed bytes per row) from the Parquet footers."""
    rows = size = 0
    for fragment in store.get_parquet_dataset(path).get_fragments():
        meta = fragment.metadata
        rows += meta.num_rows
        size += sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    return rows, (size / rows if rows else 0.0)
