"""Which rows of a Parquet dataset each training process reads.

NOTE [Shards]
The dataset's row groups, in a fixed order (files sorted by path, row groups
by index, empty ones skipped), form one sequence of N rows. Rank r of `size`
owns the contiguous rows [r*N//size, (r+1)*N//size): the shards are
disjoint, cover every row, and differ by at most one row. A rank reads only
the row groups its rows lie in (at most two of them partly), so reading is
spread evenly however Spark sized the files. Every rank computes the same
plan from the Parquet footers alone; no communication.
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class RowGroup:
    """Row group `index` of Parquet file `path` (a localized path)."""
    path: str
    index: int
    num_rows: int


@dataclass(frozen=True)
class Slice:
    """Rows [start, stop) of a row group."""
    group: RowGroup
    start: int
    stop: int

    @property
    def num_rows(self):
        return self.stop - self.start


def row_groups(dataset):
    """The non-empty row groups of a pyarrow.dataset.Dataset, in plan order."""
    groups = []
    for fragment in sorted(dataset.get_fragments(), key=lambda f: f.path):
        meta = fragment.metadata
        for i in range(meta.num_row_groups):
            n = meta.row_group(i).num_rows
            if n:
                groups.append(RowGroup(fragment.path, i, n))
    return groups


def bounds(num_rows, rank, size):
    """[start, stop) of rank's rows among num_rows (NOTE [Shards])."""
    return rank * num_rows // size, (rank + 1) * num_rows // size


def plan(groups, rank, size):
    """The Slices of `groups` that make up rank's shard, in order."""
    total = sum(g.num_rows for g in groups)
    start, stop = bounds(total, rank, size)
    slices, offset = [], 0
    for g in groups:
        lo, hi = max(start, offset), min(stop, offset + g.num_rows)
        if lo < hi:
            slices.append(Slice(g, lo - offset, hi - offset))
        offset += g.num_rows
        if offset >= stop:
            break
    return slices


def shard_sizes(num_rows, size):
    """The row count of every rank's shard."""
    return [hi - lo for lo, hi in (bounds(num_rows, r, size) for r in range(size))]


def epoch_batch_sizes(shard_rows, min_shard_rows, batch_size):
    """The batch sizes of one pass over a shard of shard_rows rows, when the
    smallest shard of the job has min_shard_rows: every rank takes the same
    number of steps, ceil(min_shard_rows / batch_size) (the collectives of a
    step need every rank), all of batch_size but the last, which holds the
    rest of the shard (between 1 and batch_size + 1 rows)."""
    if min_shard_rows < 1:
        raise ValueError("every shard needs at least one row")
    steps = -(-min_shard_rows // batch_size)
    return [batch_size] * (steps - 1) + [shard_rows - (steps - 1) * batch_size]
