"""The one `_core.Runtime` of this process, shared by every framework adapter.

Upstream keeps the core's state in C++ globals; horovod_accel's core has no
process-wide state, so this module holds the default instance in one small
object, `DEFAULT_RUNTIME`. The C++ extension is imported on first use, so
importing an adapter never fails merely because the core is not built.
"""
import threading

from horovod_accel.common.install_info import load_core

NOT_INITIALIZED = "Horovod has not been initialized; use hvd.init()."


class DefaultRuntime:
    """Lazily creates and owns the process's `_core.Runtime`.

    Adapters register reset listeners (e.g. the torch handle table); they are
    called after every successful `init()` and after every `shutdown()`, so
    per-job Python state (pending handles, unnamed-op counters) never leaks
    from one init/shutdown cycle into the next.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._runtime = None
        self._build_info = None
        self._reset_listeners = []
        self._elastic_worker = None
        self._elastic_checked = False
        self._thread_setters = {}   # framework -> fn(n) (compute_threads.apply_at_init)
        self._threads_reported = False
        # The job's variables when mpi.bootstrap formed it (started by
        # mpirun, or init(comm=<mpi4py communicator>)); {} otherwise. Every
        # later init() of the process joins the same job (JobSpec, job.py).
        self.mpi_job = {}

    # The `horovod_accel._core` module; ImportError with a how-to-fix message
    # (install_info.load_core, called directly: the per-op path uses it).
    core = staticmethod(load_core)

    def runtime(self):
        """The Runtime, created on first call (initialized or not)."""
        with self._lock:
            if self._runtime is None:
                self._runtime = self.core().Runtime()
            return self._runtime

    def initialized_runtime(self):
        """The Runtime if `init()` has completed; ValueError otherwise."""
        rt = self._runtime
        if rt is None or not rt.is_initialized():
            raise ValueError(NOT_INITIALIZED)
        return rt

    def enqueue_runtime(self):
        """The Runtime for an op's enqueue, without a check of its own: the
        core's enqueue refuses ops (ValueError) unless init() has completed.
        ValueError if no Runtime was ever created."""
        rt = self._runtime
        if rt is None:
            raise ValueError(NOT_INITIALIZED)
        return rt

    def is_initialized(self):
        rt = self._runtime
        return rt is not None and rt.is_initialized()

    def build_info(self):
        """`_core.build_info()` (cached): which controllers/backends/devices are
        built, plus `mpi_flavours`: the MPI families with a shim beside the core
        (mpirun launch and mpi4py communicators; `mpi_built` when any, which also
        adds "mpi" to the controllers and CPU operations)."""
        if self._build_info is None:
            from horovod_accel.common import mpi  # noqa: PLC0415 (avoids an import cycle)
            info = dict(self.core().build_info())
            info["mpi_flavours"] = mpi.built_flavours()
            info["mpi_built"] = bool(info["mpi_flavours"])
            if info["mpi_built"]:  # the core's mpi backend/controller run through a shim
                info["controllers"] = list(info["controllers"]) + ["mpi"]
                info["cpu_operations"] = list(info["cpu_operations"]) + ["mpi"]
            self._build_info = info
        return self._build_info

    def elastic_worker(self):
        """The process's ElasticWorker (elastic_worker.py) in a worker started
        by horovodrun's elastic driver; None in any other process (decided
        once: the environment that says so is set at spawn)."""
        if not self._elastic_checked:
            from horovod_accel.common import elastic_worker  # noqa: PLC0415
            with self._lock:
                if not self._elastic_checked:
                    if elastic_worker.in_elastic_job():
                        self._elastic_worker = elastic_worker.ElasticWorker()
                    self._elastic_checked = True
        return self._elastic_worker

    def add_reset_listener(self, fn):
        """Calls fn() after every init() and shutdown(); idempotent per fn."""
        with self._lock:
            if fn not in self._reset_listeners:
                self._reset_listeners.append(fn)

    def add_thread_setter(self, framework, fn):
        """Registers fn(n) -> None or why-not, which sizes `framework`'s
        compute pools to n threads at init() (compute_threads.py); an adapter
        calls this when it is imported. Idempotent per framework."""
        with self._lock:
            self._thread_setters[framework] = fn

    def apply_compute_threads(self, rank, local_size):
        """compute_threads.apply_at_init with the registered setters; logs
        only on the first call of the process."""
        from horovod_accel.common import compute_threads  # noqa: PLC0415
        with self._lock:
            setters = dict(self._thread_setters)
            first, self._threads_reported = not self._threads_reported, True
        return compute_threads.apply_at_init(rank, local_size, setters, first)

    def notify_reset(self):
        with self._lock:
            listeners = list(self._reset_listeners)
        for fn in listeners:
            fn()


DEFAULT_RUNTIME = DefaultRuntime()
