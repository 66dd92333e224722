"""Process sets: subsets of ranks that run collectives together
(upstream `horovod.common.process_sets`).

A ProcessSet is registered either statically (`hvd.init(process_sets=[...])`)
or dynamically (`add_process_set`, needs HOROVOD_DYNAMIC_PROCESS_SETS=1 or
`init(process_sets="dynamic")`). Registration assigns `process_set_id`; ops take
the object (`process_set=`). Broadcast root ranks are always *global* ranks.
"""
import threading
from typing import Optional, Sequence, Union

from horovod_accel.common.default_runtime import DEFAULT_RUNTIME
from horovod_accel.common.util import is_iterable


class ProcessSet:
    """A set of Horovod ranks (sorted). `process_set_id` is None until the set
    is registered; `size()`, `rank()` and `included()` then describe it."""

    process_set_id = None
    ranks = None
    mpi_comm = None
    _ended_by_shutdown = False  # registered once, then invalidated by shutdown()

    def __init__(self, ranks_or_comm: Union[Sequence[int], object]):
        if not is_iterable(ranks_or_comm):
            raise ValueError(
                "ProcessSet needs a list of process ranks; building one from an MPI communicator "
                "is not supported by horovod_accel yet: pass the Horovod ranks of its members "
                "(e.g. hvd.allgather_object(hvd.rank()) among them).")
        ranks = sorted(ranks_or_comm)
        if any(isinstance(r, bool) or not isinstance(r, int) for r in ranks):
            raise ValueError(f"ProcessSet should be initialized with a list of process ranks (ints), "
                             f"got {list(ranks_or_comm)!r}")
        self.ranks = ranks

    def _invalidate(self):
        self.process_set_id = None
        self._ended_by_shutdown = True

    def size(self) -> Optional[int]:
        """Number of ranks in the set, or None if the set is not registered."""
        if self.process_set_id is None:
            return None
        return DEFAULT_RUNTIME.initialized_runtime().process_set_size(self.process_set_id)

    def rank(self) -> Optional[int]:
        """This process's rank within the set, or None if the set is not
        registered. ValueError if this process is not a member."""
        if self.process_set_id is None:
            return None
        r = DEFAULT_RUNTIME.initialized_runtime().process_set_rank(self.process_set_id)
        if r < 0:
            raise ValueError(f"Process is not part of provided process set: {self}")
        return r

    def included(self) -> Optional[bool]:
        """Whether this process is a member, or None if the ranks are unknown."""
        if self.ranks is None:
            return None
        return DEFAULT_RUNTIME.initialized_runtime().rank() in self.ranks

    def __str__(self) -> str:
        return f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks}, mpi_comm={self.mpi_comm})"

    __repr__ = __str__


global_process_set = ProcessSet([])
global_process_set.process_set_id = 0


def registered_id(process_set):
    """The id of a registered ProcessSet (what the core's ops take); ValueError
    if `process_set` is not a ProcessSet or was never registered."""
    if not isinstance(process_set, ProcessSet):
        raise ValueError(f"process_set must be an hvd.ProcessSet, got {type(process_set).__name__}.")
    if process_set.process_set_id is None:
        hint = ""
        if process_set._ended_by_shutdown:
            # Process sets live for one init(); an elastic reset is shutdown(); init().
            hint = (" It was registered before the last hvd.shutdown() (an elastic reset shuts "
                    "down too): register it again after init(), e.g. in a reset callback "
                    "(state.register_reset_callbacks), with the ranks of the new job.")
        raise ValueError(f"{process_set} is not registered: pass it to hvd.init(process_sets=[...]) "
                         f"or hvd.add_process_set() first.{hint}")
    return process_set.process_set_id


class _Registry:
    """The ProcessSet objects this process has handed ids to, so shutdown()
    can invalidate them (ids are only meaningful within one init)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._sets = []

    def bind(self, ps, process_set_id):
        with self._lock:
            ps.process_set_id = process_set_id
            if process_set_id != 0 and all(p is not ps for p in self._sets):
                self._sets.append(ps)

    def forget(self, ps):
        with self._lock:
            ps._invalidate()
            self._sets = [p for p in self._sets if p is not ps]

    def find(self, process_set_id):
        """The registered ProcessSet with this id; ValueError if none is."""
        if process_set_id == 0:
            return global_process_set
        with self._lock:
            for ps in self._sets:
                if ps.process_set_id == process_set_id:
                    return ps
        raise ValueError(f"No process set with id {process_set_id} is registered (it was removed, "
                         f"or hvd.shutdown()/init() ran since the op was traced).")

    def invalidate_all(self):
        with self._lock:
            for ps in self._sets:
                ps._invalidate()
            self._sets = []
        global_process_set.ranks = []


_REGISTRY = _Registry()


def process_set_by_id(process_set_id):
    """The registered ProcessSet whose id is `process_set_id` (for ops that
    carry the id, e.g. the torch custom ops a compiled graph calls)."""
    return _REGISTRY.find(process_set_id)


def _check_process_set_list(process_sets):
    for i, ps in enumerate(process_sets):
        if not isinstance(ps, ProcessSet):
            raise ValueError(f"process_sets entry number {i} is {ps!r}; pass hvd.ProcessSet objects "
                             f"(e.g. hvd.ProcessSet([0, 1])) or the string 'dynamic'.")


def _init_process_sets(process_sets):
    """Binds the given ProcessSet objects to the ids the core registered (by
    ranks) and fills in global_process_set.ranks. Called by init()."""
    rt = DEFAULT_RUNTIME.initialized_runtime()
    ids = {tuple(rt.process_set_ranks(i)): i for i in rt.process_set_ids()}
    global_process_set.ranks = list(range(rt.size()))
    seen = {0}
    for idx, ps in enumerate(process_sets):
        ps_id = ids.get(tuple(ps.ranks))
        if ps_id is None or ps_id in seen:
            raise ValueError(f"Horovod could not be initialized because process_sets entry number "
                             f"{idx} is a duplicate or was not registered: {ps}")
        seen.add(ps_id)
        _REGISTRY.bind(ps, ps_id)


def add_process_set(process_set: Union[ProcessSet, Sequence[int]]) -> ProcessSet:
    """Registers a new process set after init and returns it (registered).

    Collective: every rank must call it, in the same order, with the same
    ranks. Needs HOROVOD_DYNAMIC_PROCESS_SETS=1 (or init(process_sets="dynamic")).
    ValueError if the set exists already or the object was registered before.
    """
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    if process_set.process_set_id is not None:
        raise ValueError(f"Attempted to add process set {process_set} that has been added before")
    rt = DEFAULT_RUNTIME.initialized_runtime()
    try:
        ps_id = rt.add_process_set(list(process_set.ranks))
    except ValueError as e:
        # The core's message already says what to do (dynamic mode, bad
        # ranks); duplicates get upstream's wording as well.
        if "already exists" in str(e):
            raise ValueError(f"Attempted to add a duplicate process set: {process_set} ({e})") from None
        raise
    _REGISTRY.bind(process_set, ps_id)
    return process_set


def remove_process_set(process_set: ProcessSet) -> bool:
    """Removes a registered process set; True on success. Collective like
    add_process_set. The global set and unregistered sets are never removed
    (False). On success the object is invalidated (process_set_id = None)."""
    ps_id = process_set.process_set_id
    if ps_id is None or ps_id == 0:
        return False
    rt = DEFAULT_RUNTIME.initialized_runtime()
    removed = rt.remove_process_set(ps_id)
    _REGISTRY.forget(process_set)
    return bool(removed)
