"""BaseHorovodWorker: the class every rank's Ray actor runs (upstream's name
and methods, so code that subclasses it or calls its methods keeps working).

Lifetime: one actor per rank. In a RayExecutor job (static_adapter.py) the
actor lives from start() to shutdown() and runs every run()/execute() call
of the job, unless a call fails (then the job is re-formed with new actors);
in elastic mode (elastic_adapter.py) an actor is one elastic
worker: it runs one call and is killed when that ends. The actor's process
environment is the rank's identity: the driver sets the HOROVOD_* variables
(update_env_vars) before any user code runs, and `hvd.init()` reads them.

Threading: Ray runs one method at a time on this actor, in the order the
driver submitted them.
"""
import os
import socket
import sys

import ray

from horovod_accel.common import elastic_protocol as proto
from horovod_accel.common import settings
from horovod_accel.ray.utils import node_interface
from horovod_accel.runner import rank_process

# Variables that make a process a rank of some job. An actor's process may
# inherit them from the environment Ray was started in (a driver that is
# itself a rank); they are dropped so that only what the driver sets counts.
_JOB_IDENTITY = ("HOROVOD_RANK", "HOROVOD_SIZE", "HOROVOD_LOCAL_RANK", "HOROVOD_LOCAL_SIZE",
                 "HOROVOD_CROSS_RANK", "HOROVOD_CROSS_SIZE", "HOROVOD_HOSTNAME",
                 "HOROVOD_GLOO_RENDEZVOUS_ADDR", "HOROVOD_GLOO_RENDEZVOUS_PORT",
                 rank_process.SECRET_ENV, "HOROVOD_ELASTIC", proto.WORKER_ID_ENV,
                 proto.SPAWN_ROUND_ENV, proto.ROUND_ENV)


def shutdown_horovod_if_running():
    """Ends this process's Horovod job (as a rank's exit would), so that its
    peers' pending and future ops fail with HorovodInternalError at once
    instead of waiting for a rank that will not come. A no-op if Horovod was
    never initialized here (never imports the core for nothing)."""
    runtime_mod = sys.modules.get("horovod_accel.common.default_runtime")
    if runtime_mod is None or not runtime_mod.DEFAULT_RUNTIME.is_initialized():
        return
    from horovod_accel.common.basics import HorovodBasics  # noqa: PLC0415
    HorovodBasics().shutdown()


class RunCall:
    """run()'s fn(*args, **kwargs), in the shape execute() calls: with the
    executable, which it ignores. Travels to the actors by cloudpickle."""

    def __init__(self, fn, args, kwargs):
        self.fn, self.args, self.kwargs = fn, tuple(args or ()), dict(kwargs or {})

    def __call__(self, executable):
        return self.fn(*self.args, **self.kwargs)


class BaseHorovodWorker:
    """A rank's actor. `executable` is the instance of start()'s
    executable_cls (None without one); execute(fn) calls fn(executable)."""

    executable = None

    def __init__(self, world_rank=0, world_size=1):
        if ray.get_runtime_context().get_actor_id() is not None:  # never in a driver
            for name in _JOB_IDENTITY:
                os.environ.pop(name, None)
        os.environ["HOROVOD_HOSTNAME"] = self.node_id()
        os.environ["HOROVOD_RANK"] = str(world_rank)
        os.environ["HOROVOD_SIZE"] = str(world_size)

    # ---- where this actor runs

    def node_id(self) -> str:
        """The Ray node id (hex) of this actor's node: the rank's host name."""
        return ray.get_runtime_context().get_node_id()

    def node_ip(self) -> str:
        """The address Ray reaches this actor's node at."""
        return ray.util.get_node_ip_address()

    def hostname(self) -> str:
        return socket.gethostname()

    def get_gpu_ids(self):
        """The GPU ids Ray assigned to this actor."""
        return ray.get_gpu_ids()

    def placement(self):
        """Where this actor runs, in one call: {"node_id", "node_ip",
        "iface" (the interface holding node_ip, or None), "hostname"}."""
        return {"node_id": self.node_id(), "node_ip": self.node_ip(),
                "iface": node_interface(), "hostname": self.hostname()}

    # ---- environment

    def update_env_vars(self, env_vars):
        """Sets variables of this actor's process (values become strings)."""
        os.environ.update({str(k): str(v) for k, v in env_vars.items()})

    def env_vars(self):
        return dict(os.environ)

    # ---- user code

    def start_executable(self, executable_cls=None, executable_args=None,
                         executable_kwargs=None):
        """Creates `executable` = executable_cls(*args, **kwargs) (runs after
        the driver set the rank's environment, so __init__ may hvd.init())."""
        if executable_cls is not None:
            self.executable = executable_cls(*(executable_args or ()),
                                             **(executable_kwargs or {}))

    def execute(self, func):
        """Returns func(executable). If func raises, this rank's Horovod job is
        shut down before the exception goes back to the driver (a failed rank
        never leaves its peers waiting); the driver then re-forms the job
        before its next call (NOTE [A failed call ends the job])."""
        try:
            return func(self.executable)
        except BaseException:
            shutdown_horovod_if_running()
            raise

    def execute_elastic(self, func, executable=None, use_node_iface=False):
        """One elastic worker's whole life (actor_rank.py): creates the
        executable ((cls, args, kwargs) or None), then returns
        ("returned", final rank, func(executable)), or ("exited", exit code,
        None) when func exits (code 0: the driver removed this worker).
        use_node_iface: Gloo talks over the interface of this node's Ray
        address unless HOROVOD_GLOO_IFACE is set. Horovod is shut down here
        once func ends, as a process's exit would."""
        if use_node_iface and not os.environ.get("HOROVOD_GLOO_IFACE"):
            iface = node_interface()
            if iface:
                os.environ["HOROVOD_GLOO_IFACE"] = iface
        try:
            if executable is not None:
                self.start_executable(*executable)
            value = func(self.executable)
        except SystemExit as e:
            shutdown_horovod_if_running()
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            return "exited", code, None
        except BaseException:
            shutdown_horovod_if_running()
            raise
        rank = settings.read("HOROVOD_RANK")
        shutdown_horovod_if_running()
        return "returned", rank, value

    def shutdown_horovod(self):
        """hvd.shutdown() here if Horovod runs (the driver's shutdown() calls
        it on every rank before killing the actors, so no rank sees a peer
        vanish mid-job)."""
        shutdown_horovod_if_running()

    def set_queue(self, queue):
        """Routes ray_logger.log() of this actor to `queue` (a ray.util.queue.Queue)."""
        from horovod_accel.ray import ray_logger  # noqa: PLC0415
        ray_logger.configure(queue)
