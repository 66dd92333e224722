"""The basic Horovod API every framework adapter re-exports (upstream
`horovod.common.basics.HorovodBasics`): init/shutdown, topology, timeline,
build flags and reduction-op constants.

All state lives in `DEFAULT_RUNTIME` (one `_core.Runtime` per process), so
several adapters (torch, tensorflow, ...) in one process share one job, as
upstream's shared C++ globals do. `HorovodBasics` itself is stateless.
"""
import atexit
import os
import threading
import warnings

from horovod_accel.common import compute_threads as _compute_threads
from horovod_accel.common import job as _job
from horovod_accel.common import log
from horovod_accel.common import mpi as _mpi
from horovod_accel.common import process_sets as _ps
from horovod_accel.common.default_runtime import DEFAULT_RUNTIME, NOT_INITIALIZED
from horovod_accel.common.util import is_iterable

_atexit_lock = threading.Lock()
_atexit_registered = []  # non-empty once shutdown is registered with atexit


class HorovodBasics:
    """Wrapper of the basic Horovod API over the process's default runtime."""

    # Reduction ops: upstream's numbering (common/message.h), equal to _core.OP_*.
    Average = 0
    Sum = 1
    Adasum = 2
    Min = 3
    Max = 4
    Product = 5

    # ---------------------------------------------------------------- lifecycle

    def init(self, comm=None, process_sets=None):
        """Initializes Horovod; blocks until every rank has connected.

        comm: None (all ranks), an mpi4py communicator (its ranks form the
            job, each sub-communicator its own; MPI bootstrap, see
            docs/design/mpi.md), or a list of ranks: under mpirun, the
            MPI_COMM_WORLD ranks that form the job (only they call init);
            under horovodrun it must cover the whole job (else ValueError).
        process_sets: None, a list of `ProcessSet` (registered in addition to
            the global set; duplicates -> ValueError), or "dynamic" (as
            HOROVOD_DYNAMIC_PROCESS_SETS=1: add/remove_process_set work).

        Under horovodrun the job comes from its variables; under mpirun (Open
        MPI, MPICH) without them, from MPI (horovod_accel.common.mpi.bootstrap).
        Idempotent while initialized (process sets given again are bound to the
        already registered sets with the same ranks). Registers shutdown() with
        atexit. Sizes the frameworks' compute thread pools to this rank's
        share of the host's CPUs unless the user chose (compute_threads.py).
        After shutdown(), or once this rank was told that its job
        generation ended (an op of it raised the error of a peer's shutdown,
        a failure or a deadlock), init() starts a new job generation; until
        told, init() is a no-op whenever the news arrives (NOTE [Told of the
        end] in csrc/common/generation_end.h).
        Raises ValueError for bad arguments/settings, RuntimeError if the ranks
        cannot connect or MPI cannot be used.
        """
        dynamic = False
        if process_sets is None:
            process_sets = []
        elif isinstance(process_sets, str):
            if process_sets.lower() != "dynamic":
                raise ValueError(f"process_sets must be a list of hvd.ProcessSet or 'dynamic', "
                                 f"got {process_sets!r}")
            process_sets = []
            dynamic = True
        process_sets = list(process_sets)
        _ps._check_process_set_list(process_sets)
        _compute_threads.parse_setting(os.environ)  # a bad value fails before connecting
        self._check_comm(comm, None)
        rt = DEFAULT_RUNTIME.runtime()
        if rt.generation_end_told():
            # A peer shut down (or failed, or a deadlock ended the
            # generation), this rank's program was told by an op's error and
            # never called shutdown() (e.g. its tearDown raised first): finish
            # that generation here, so this init starts the next one with them.
            self.shutdown()
        if not rt.is_initialized():
            self._mpi_bootstrap(comm)
            from horovod_accel.common import plugins  # noqa: PLC0415 (needs the core loaded)
            paths, errors = plugins.plugin_paths()
            for error in errors:
                warnings.warn(f"horovod_accel: {error}", RuntimeWarning, stacklevel=2)
            sets = [list(ps.ranks) for ps in process_sets]
            if DEFAULT_RUNTIME.elastic_worker() is None:
                rt.init(_job.job_spec({**os.environ, **DEFAULT_RUNTIME.mpi_job}), sets, dynamic,
                        paths)
            else:
                self._init_elastic(rt, sets, dynamic, paths)
        self._check_comm(comm, rt.size())
        DEFAULT_RUNTIME.apply_compute_threads(rt.rank(), rt.local_size())
        with _atexit_lock:
            if not _atexit_registered:
                atexit.register(self.shutdown)
                _atexit_registered.append(True)
        _ps._init_process_sets(process_sets)
        DEFAULT_RUNTIME.notify_reset()

    @staticmethod
    def _check_comm(comm, size):
        if comm is None or _mpi.is_communicator(comm):
            return
        if not is_iterable(comm):
            raise ValueError(f"init(comm=...) takes an mpi4py communicator or a list of ranks, "
                             f"got {type(comm).__name__}.")
        ranks = sorted(comm)
        if DEFAULT_RUNTIME.mpi_job:
            return  # under mpirun the listed ranks formed the job (mpi.bootstrap)
        if size is not None and ranks and ranks != list(range(size)):
            raise ValueError(f"init(comm={list(comm)}) would run Horovod on a subset of the "
                             f"{size} ranks horovodrun launched; a list of ranks selects a "
                             f"subset only in jobs started by mpirun. Launch only the ranks you "
                             f"need, or use a ProcessSet.")

    @staticmethod
    def _init_elastic(rt, sets, dynamic, paths):
        """init() of a worker of an elastic job (horovodrun --min-np/--host-
        discovery-script): joins the next round the driver forms, with the
        rank and size it assigns (NOTE [Elastic rounds]). A round that cannot
        form (a peer lost during its rendezvous) is left for the next one, so
        a new worker never fails for its peers' sake. A worker the driver
        removed exits(0)."""
        from horovod_accel.common.elastic_worker import WorkerRemoved  # noqa: PLC0415
        worker = DEFAULT_RUNTIME.elastic_worker()
        while True:
            try:
                assignment = worker.join_next_round()
            except WorkerRemoved as e:
                log.get_logger(__name__).warning("horovod_accel: %s", e)
                raise SystemExit(0) from None
            # Published for the user's program, as horovodrun's are.
            os.environ.update(assignment)
            try:
                rt.init(_job.job_spec({**os.environ, **assignment}), sets, dynamic, paths)
                return
            except RuntimeError as e:  # ValueError (a bad setting) is the user's to fix
                log.get_logger(__name__).warning(
                    "horovod_accel: elastic round %d did not form (%s); waiting for the next one",
                    worker.round, e)

    @staticmethod
    def _mpi_bootstrap(comm):
        """Forms the job from MPI when this process was started by mpirun
        (not horovodrun) or comm is an mpi4py communicator; the job's
        variables (mpi.bootstrap) stay in DEFAULT_RUNTIME.mpi_job for this
        and every later init()."""
        from_horovodrun = "HOROVOD_GLOO_RENDEZVOUS_ADDR" in os.environ
        if _mpi.is_communicator(comm):
            if from_horovodrun and not DEFAULT_RUNTIME.mpi_job:
                raise ValueError("init(comm=<mpi4py communicator>) needs the job to be started "
                                 "by mpirun, not horovodrun; use comm=None under horovodrun.")
        elif from_horovodrun or _mpi.launcher() is None:
            return
        try:
            DEFAULT_RUNTIME.mpi_job = _mpi.bootstrap(comm)
        except _mpi.MpiError as e:
            raise RuntimeError(f"Horovod cannot form the job from MPI: {e}") from None

    def shutdown(self):
        """Stops the background thread (collectively with the other ranks);
        pending ops fail with HorovodInternalError. Safe to call repeatedly."""
        if DEFAULT_RUNTIME.is_initialized():
            DEFAULT_RUNTIME.runtime().shutdown()
            _ps._REGISTRY.invalidate_all()
            DEFAULT_RUNTIME.notify_reset()

    def is_initialized(self):
        """True between a successful init() and shutdown()."""
        return DEFAULT_RUNTIME.is_initialized()

    # ---------------------------------------------------------------- timeline

    def start_timeline(self, file_path, mark_cycles=False):
        """Starts writing a Chrome-trace timeline to file_path (rank 0 writes).
        ValueError if not initialized or HOROVOD_TIMELINE was unset at init
        (set HOROVOD_TIMELINE=DYNAMIC)."""
        DEFAULT_RUNTIME.initialized_runtime().start_timeline(str(file_path), bool(mark_cycles))

    def stop_timeline(self):
        """Stops the timeline and closes the file (valid JSON afterwards)."""
        DEFAULT_RUNTIME.initialized_runtime().stop_timeline()

    # ---------------------------------------------------------------- topology

    def size(self):
        """Number of Horovod processes."""
        return DEFAULT_RUNTIME.initialized_runtime().size()

    def local_size(self):
        """Number of Horovod processes on this host."""
        return DEFAULT_RUNTIME.initialized_runtime().local_size()

    def cross_size(self):
        """Number of hosts that have a process with this process's local rank."""
        return DEFAULT_RUNTIME.initialized_runtime().cross_size()

    def rank(self):
        """Global rank of this process."""
        return DEFAULT_RUNTIME.initialized_runtime().rank()

    def local_rank(self):
        """Rank of this process among the processes of its host."""
        return DEFAULT_RUNTIME.initialized_runtime().local_rank()

    def cross_rank(self):
        """Index of this process's host among the hosts."""
        return DEFAULT_RUNTIME.initialized_runtime().cross_rank()

    def is_homogeneous(self):
        """True if every host runs the same number of processes."""
        return DEFAULT_RUNTIME.initialized_runtime().is_homogeneous()

    # ---------------------------------------------------------------- build flags

    def mpi_threads_supported(self):
        """Whether MPI runs at MPI_THREAD_MULTIPLE, so Horovod's background
        thread and the user's mpi4py calls may mix. ValueError (as upstream)
        when MPI is not in use."""
        if not self.mpi_enabled():
            raise ValueError("Horovod MPI is not enabled; Please make sure it's installed and enabled.")
        DEFAULT_RUNTIME.initialized_runtime()
        return _mpi.active().thread_level() == _mpi.THREAD_MULTIPLE

    def mpi_enabled(self):
        """True if this job was formed through MPI (started by mpirun or from
        an mpi4py communicator). Negotiation and data run over MPI only when
        HOROVOD_CONTROLLER=mpi / HOROVOD_CPU_OPERATIONS names mpi."""
        mpi = _mpi.active()
        return mpi is not None and mpi.initialized() and not mpi.finalized()

    def mpi_built(self):
        """True if this installation can use MPI (a shim for Open MPI or MPICH)."""
        return bool(DEFAULT_RUNTIME.build_info()["mpi_built"])

    def gloo_enabled(self):
        """True if Gloo is built (the default controller; HOROVOD_CONTROLLER=mpi under mpirun)."""
        return self.gloo_built()

    def gloo_built(self):
        return bool(DEFAULT_RUNTIME.build_info()["gloo_built"])

    def nccl_built(self):
        """NCCL_VERSION_CODE of the NCCL support built, or 0."""
        return int(DEFAULT_RUNTIME.build_info()["nccl_built"])

    def ddl_built(self):
        return bool(DEFAULT_RUNTIME.build_info()["ddl_built"])

    def ccl_built(self):
        return bool(DEFAULT_RUNTIME.build_info()["ccl_built"])

    def cuda_built(self):
        return bool(DEFAULT_RUNTIME.build_info()["cuda_built"])

    def rocm_built(self):
        return bool(DEFAULT_RUNTIME.build_info()["rocm_built"])

    # ---------------------------------------------------------------- process-set internals

    def _process_set_rank(self, process_set_id):
        r = DEFAULT_RUNTIME.initialized_runtime().process_set_rank(process_set_id)
        if r < 0:
            raise ValueError("Process is not part of provided process set.")
        return r

    def _process_set_size(self, process_set_id):
        return DEFAULT_RUNTIME.initialized_runtime().process_set_size(process_set_id)

    def _get_process_set_ids_and_ranks(self):
        """{process_set_id: [global ranks]} of every registered set."""
        rt = DEFAULT_RUNTIME.initialized_runtime()
        return {i: list(rt.process_set_ranks(i)) for i in rt.process_set_ids()}


__all__ = ["HorovodBasics", "NOT_INITIALIZED"]
