"""What the training processes of every estimator share (they receive these
objects, pickled, inside the horovod.spark.run call):
- DataSpec: the Parquet datasets of one fit and how to batch them; on a rank
  it opens that rank's readers and tells the batch sizes of every epoch;
- Checkpoint: a run's state after some epochs, as the driver sees it;
- RunFiles: the run's folder in the store (runs/<run_id>): the checkpoint,
  written by rank 0 after every epoch, and the logs.
"""
import json
import posixpath
from dataclasses import dataclass

from horovod_accel.spark.common import reader as reader_mod
from horovod_accel.spark.common import shard

HISTORY_LOG = "history.json"


@dataclass
class Checkpoint:
    """A run's state after `epochs` epochs: the history of those epochs and
    the framework's state (torch: the checkpoint file's bytes; keras: the
    model file's bytes)."""
    epochs: int
    history: object
    state: bytes


@dataclass
class DataSpec:
    store: object
    train_path: str
    val_path: object                 # None without validation
    infos: dict                      # {column: ColumnInfo}, features, labels, sample weight
    feature_cols: list
    label_cols: list
    sample_weight_col: object
    batch_size: int
    val_batch_size: int
    train_steps_per_epoch: object = None
    validation_steps_per_epoch: object = None
    buffer_rows: int = 0
    seed: object = None
    cache: bool = False

    def train_batches(self, rank, size, first_epoch):
        """(Batches, sizes): this rank's training batches from epoch
        `first_epoch` on (pass p is shuffled with seed (seed, rank, p)), and
        the batch sizes of one epoch, of the same count on every rank."""
        reader = reader_mod.ShardReader(self.store, self.train_path, self.infos, rank, size,
                                        self.buffer_rows, self.seed, self.cache)
        if self.train_steps_per_epoch:
            sizes = [self.batch_size] * int(self.train_steps_per_epoch)
        else:
            sizes = shard.epoch_batch_sizes(reader.num_rows, min(reader.shard_sizes),
                                            self.batch_size)
        return reader_mod.Batches(reader.passes(first_pass=first_epoch)), sizes

    def val_batches(self, rank, size):
        """(Batches, sizes) of this rank's validation rows, in order, once
        per epoch (or validation_steps_per_epoch batches); sizes may differ
        between ranks (validation runs no collective per batch). Every rank
        has validation rows (dataset.prepare). None without validation."""
        if self.val_path is None:
            return None
        reader = reader_mod.ShardReader(self.store, self.val_path, self.infos, rank, size,
                                        0, None, self.cache)
        if self.validation_steps_per_epoch:
            sizes = [self.val_batch_size] * int(self.validation_steps_per_epoch)
        else:
            full, rest = divmod(reader.num_rows, self.val_batch_size)
            sizes = [self.val_batch_size] * full + ([rest] if rest else [])
        return reader_mod.Batches(reader.passes()), sizes


@dataclass
class RunFiles:
    """runs/<run_id> of the store; checkpoint is None when the store does
    not save runs (then nothing is written)."""
    store: object
    run_id: str
    checkpoint: object = None       # full path of the checkpoint file
    logs: object = None             # full path of the logs folder

    @classmethod
    def of(cls, store, run_id, checkpoint_name=None):
        if not store.saving_runs():
            return cls(store, run_id)
        name = checkpoint_name or store.get_checkpoint_filename()
        return cls(store, run_id, posixpath.join(store.get_checkpoint_path(run_id), name),
                   store.get_logs_path(run_id))

    def write(self, path, data):
        """Writes bytes to a full path of the run (no-op when not saving runs)."""
        if self.checkpoint is not None:
            self.store.write_bytes(path, data)

    def write_history(self, history):
        """logs/history.json: the metrics of every epoch so far."""
        if self.logs is not None:
            self.store.write_text(posixpath.join(self.logs, HISTORY_LOG),
                                  json.dumps(history, indent=1))
