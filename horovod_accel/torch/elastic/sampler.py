"""ElasticSampler (upstream `horovod.torch.elastic.ElasticSampler`): a torch
Sampler that shards one epoch's indices over the ranks and, after an elastic
reset, reshards the indices not yet processed over the new `hvd.size()`.

Contract (exact accounting, fixing upstream horovod#3399 / #3143):
- The epoch's order is `range(len(dataset))`, shuffled with
  `random.Random(seed + epoch)` when `shuffle`; every rank computes the same.
- `processed_indices` is the set of dataset indices processed this epoch.
  `record_batch` / `record_indices` add what *this* rank processed; when the
  sampler is tracked by a TorchState, every `state.commit()` merges all
  ranks' new records into every rank's set (one small allgather of what was
  recorded since the last commit), and a sync takes the union over all
  ranks. So after a commit, a reset (any new size) or a restore, the
  remaining indices -- those not in the union -- are sharded again: across
  all ranks, within an epoch, no index is lost and none is recorded twice.
  (Records made after the last commit by a rank that then leaves cannot be
  known to the others; elastic host changes are raised at commits, so this
  only concerns a HostsUpdatedInterrupt that user code raises elsewhere.
  After a failure, restore() drops every rank's uncommitted records, with
  the model's uncommitted updates, so those indices are processed again.)
- Sharding: the remaining indices R (n of them, in epoch order) go to rank
  r as R[r], R[r + size], ...; so every rank yields the same number of
  indices (collectives stay matched), the shards are padded up to
  ceil(n / size) with indices from the start of R (cycling when n < size).
  A padded entry is a repeat: it is yielded (the data loader needs it) but
  never recorded -- `record_batch` counts only this rank's own indices, and
  `record_indices` drops this rank's padding. Padding is at most one index
  per rank per shard, always the shard's last entry.
- `set_epoch(epoch)` (call it at the *end* of an epoch, as upstream) starts
  the next epoch: clears the processed set and reshards everything.

Rank and size are read from the torch adapter (`hvd.rank()`, `hvd.size()`)
at construction and at every `reset()`; hvd.init() must have run.
"""
import math
import random

import torch.utils.data

from horovod_accel.torch.mpi_ops import rank, size


class ElasticSampler(torch.utils.data.Sampler):
    """Shards a dataset (of constant length) over the ranks, reshards the
    unprocessed rest after elastic resets (module docstring).

    Args:
        dataset: the dataset to sample (only `len(dataset)` is used).
        shuffle: shuffle the indices, differently every epoch (default True).
        seed: shuffle seed; must be the same on every rank (default 0).
    """

    def __init__(self, dataset, shuffle=True, seed=0):
        super().__init__()
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_indices = set()
        self.num_replicas = 0
        self.rank = 0
        self.remaining_indices = []
        self.indices = []
        self.num_samples = 0
        self.total_size = 0
        self._unshared = set()    # recorded here, not yet merged by a commit
        self._num_own = 0         # indices[:_num_own] are this rank's own
        self._padding = frozenset()
        self.reset()

    # ------------------------------------------------------------ epoch & records

    def set_epoch(self, epoch):
        """Starts epoch `epoch`: a new order (when shuffling), nothing
        processed. Call it at the end of an epoch, so a reset in the middle
        of an epoch does not forget what was processed."""
        self.epoch = epoch
        self.processed_indices = set()
        self._unshared = set()
        self.reset()

    def record_batch(self, batch_idx, batch_size):
        """Records batch `batch_idx` (of `batch_size` indices, counted in this
        rank's shard since the last reset) as processed; padding excluded."""
        start = batch_idx * batch_size
        self._record(self.indices[start:min(start + batch_size, self._num_own)])

    def record_indices(self, indices):
        """Records dataset `indices` as processed by this rank; this rank's
        padding (repeats of other ranks' indices) is ignored."""
        self._record(i for i in indices if i not in self._padding)

    def get_indices(self, batch_idx, batch_size):
        """The indices this rank yields for batch `batch_idx` of `batch_size`
        (as the data loader sees them, padding included)."""
        start = batch_idx * batch_size
        return self.indices[start:min(start + batch_size, len(self.indices))]

    def _record(self, indices):
        new = {int(i) for i in indices}
        self.processed_indices |= new
        self._unshared |= new

    # ------------------------------------------------------------ state

    def state_dict(self):
        return {"epoch": self.epoch, "processed_indices": set(self.processed_indices)}

    def load_state_dict(self, state_dict):
        """Adopts `state_dict` (epoch and processed set) and reshards; what
        was recorded here since the last commit and is not in it is dropped."""
        self.epoch = state_dict["epoch"]
        self.processed_indices = set(state_dict["processed_indices"])
        self._unshared = set()
        self.reset()

    def reset(self):
        """Reshards the epoch's unprocessed indices over the current size."""
        self.num_replicas, self.rank = self._world()
        processed = self.processed_indices
        self.remaining_indices = [i for i in self._epoch_order() if i not in processed]
        n = len(self.remaining_indices)
        self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        padded = self.remaining_indices + [self.remaining_indices[j % n]
                                           for j in range(self.total_size - n)]
        self.indices = padded[self.rank:self.total_size:self.num_replicas]
        self._num_own = len(range(self.rank, n, self.num_replicas))
        self._padding = frozenset(self.indices[self._num_own:])

    def _world(self):
        """(size, rank) to shard for."""
        return size(), rank()

    def _epoch_order(self):
        order = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        return order

    # ------------------------------------------------------------ merging (TorchState)

    def _commit_payload(self):
        """What this rank tells the others at a commit: (epoch, new records)."""
        return self.epoch, sorted(self._unshared)

    def _merge_commit(self, payloads):
        """Adds every rank's commit payload of this epoch; the shards stay
        as they are (the merged indices are already behind every rank)."""
        for epoch, indices in payloads:
            if epoch == self.epoch:
                self.processed_indices.update(indices)
        self._unshared = set()

    def _sync_payload(self):
        return self.epoch, sorted(self.processed_indices)

    @staticmethod
    def _synced_state(payloads):
        """The state every rank adopts at a sync: the first rank's epoch and
        the union of the processed sets of every rank in that epoch (a new
        worker contributes nothing)."""
        epoch = payloads[0][0]
        union = set()
        for e, indices in payloads:
            if e == epoch:
                union.update(indices)
        return {"epoch": epoch, "processed_indices": union}

    def __iter__(self):
        return iter(list(self.indices))

    def __len__(self):
        return self.num_samples
