"""Reads one rank's shard (NOTE [Shards] in shard.py) of a Parquet dataset in
the store as numpy batches, with pyarrow datasets (no Petastorm). Runs in
the training processes.

A batch is {column: numpy array}: a scalar column gives shape (n,), an array
or vector column (n, size), in the Parquet's dtype (the frameworks cast).
The reader is a stream of passes over the shard (`Batches`): pass p reads
the shard's row-group slices in an order shuffled with seed (seed, p), and
deals their rows through a shuffle buffer of `buffer_rows` rows (filled,
permuted, emptied: rows mix within a buffer, and buffers come from random
places of the shard). buffer_rows 0: no shuffling, the shard in order.
"""
import numpy as np

from horovod_accel.spark.common import columns as columns_mod
from horovod_accel.spark.common import shard

DEFAULT_SHUFFLE_BUFFER_BYTES = 256 << 20


def shuffle_buffer_rows(shuffle, shuffle_buffer_size, avg_row_bytes):
    """Rows of the shuffle buffer: 0 when not shuffling (shuffle False or
    shuffle_buffer_size 0, upstream's way to turn it off), the given size,
    else as many rows as fit in DEFAULT_SHUFFLE_BUFFER_BYTES."""
    if not shuffle or shuffle_buffer_size == 0:
        return 0
    if shuffle_buffer_size is not None:
        if shuffle_buffer_size < 0:
            raise ValueError(f"shuffle_buffer_size must be >= 0, got {shuffle_buffer_size}")
        return int(shuffle_buffer_size)
    return max(1, int(DEFAULT_SHUFFLE_BUFFER_BYTES // max(avg_row_bytes, 1.0)))


class ShardReader:
    """Rank `rank` of `size`'s shard of the Parquet dataset at `path`.

    infos: {name: ColumnInfo} of the columns to read. cache: keep the
    decoded shard in memory after the first pass (inmemory_cache_all).
    Reads nothing until iterated."""

    def __init__(self, store, path, infos, rank, size, buffer_rows=0, seed=None, cache=False):
        self._dataset = store.get_parquet_dataset(path)
        groups = shard.row_groups(self._dataset)
        self.total_rows = sum(g.num_rows for g in groups)
        self.shard_sizes = shard.shard_sizes(self.total_rows, size)
        self.num_rows = self.shard_sizes[rank]
        self._slices = shard.plan(groups, rank, size)
        self._infos = dict(infos)
        self._buffer_rows = buffer_rows
        self._seed = seed
        self._cache = {} if cache else None
        self._rank = rank

    def _read(self, i):
        if self._cache is not None and i in self._cache:
            return self._cache[i]
        s = self._slices[i]
        fragment = self._dataset.format.make_fragment(
            s.group.path, filesystem=self._dataset.filesystem, row_groups=[s.group.index])
        table = fragment.to_table(columns=list(self._infos)).slice(s.start, s.num_rows)
        chunk = {name: _to_numpy(table.column(name), info) for name, info in self._infos.items()}
        if self._cache is not None:
            self._cache[i] = chunk
        return chunk

    def passes(self, first_pass=0):
        """Chunks of rows ({column: array}), pass after pass, for ever
        (nothing if the shard is empty)."""
        if not self._slices:
            return
        p = first_pass
        while True:
            yield from self._one_pass(p)
            p += 1

    def _one_pass(self, p):
        if not self._buffer_rows:
            for i in range(len(self._slices)):
                yield self._read(i)
            return
        seed = None if self._seed is None else [self._seed, self._rank, p]
        rng = np.random.default_rng(seed)
        pending, rows = [], 0
        for i in rng.permutation(len(self._slices)):
            chunk = self._read(int(i))
            pending.append(chunk)
            rows += _rows(chunk)
            if rows >= self._buffer_rows:
                yield _permuted(_concat(pending), rng)
                pending, rows = [], 0
        if pending:
            yield _permuted(_concat(pending), rng)


class Batches:
    """Batches of chosen sizes cut from a stream of chunks (`take`)."""

    def __init__(self, chunks):
        self._chunks = iter(chunks)
        self._pending = []
        self._rows = 0

    def take(self, n):
        """The next n rows as one batch (blocks on the stream)."""
        while self._rows < n:
            chunk = next(self._chunks, None)
            if chunk is None:
                raise ValueError(f"asked for {n} rows of an empty shard")
            self._pending.append(chunk)
            self._rows += _rows(chunk)
        block = _concat(self._pending)
        batch = {k: v[:n] for k, v in block.items()}
        rest = {k: v[n:] for k, v in block.items()}
        self._rows -= n
        self._pending = [rest] if self._rows else []
        return batch


def _to_numpy(column, info):
    if info.kind == columns_mod.SCALAR:
        return column.to_numpy()
    values = column.combine_chunks().flatten().to_numpy(zero_copy_only=False)
    return values.reshape(len(column), info.size)


def _rows(chunk):
    return len(next(iter(chunk.values())))


def _concat(chunks):
    if len(chunks) == 1:
        return chunks[0]
    return {k: np.concatenate([c[k] for c in chunks]) for k in chunks[0]}


def _permuted(chunk, rng):
    perm = rng.permutation(_rows(chunk))
    return {k: v[perm] for k, v in chunk.items()}
