"""MPI at run time (docs/design/mpi.md): finds the MPI launcher that started
this process, loads that implementation's library and our shim for its ABI
family, and forms the Horovod job from an MPI communicator.

Nothing here is compiled against MPI. `libhvda_mpi_<flavour>.so` (built from
csrc/mpi/hvda_mpi_shim.c against the family's mpi.h only, beside `_core`)
is loaded after the launcher's libmpi, which is opened RTLD_GLOBAL so the
shim's MPI symbols (and Open MPI's own components) resolve against it.

Thread safety: `Mpi` objects are used from the thread that calls
hvd.init(); MPI runs at MPI_THREAD_MULTIPLE when the library offers it.
"""
import atexit
import ctypes
import json
import os
import secrets
import socket
import sys

from horovod_accel.common import settings
from horovod_accel.rendezvous import network
from horovod_accel.rendezvous.client import StoreClient
from horovod_accel.rendezvous.server import RendezvousStoreServer

# Sonames of each ABI family's library, in the order they are tried.
_LIBRARIES = {
    "openmpi": ("libmpi.so.40",),
    "mpich": ("libmpi.so.12", "libmpich.so.12"),
}
_NAMES = {"openmpi": "Open MPI", "mpich": "MPICH"}
_DEV_PACKAGES = {"openmpi": "libopenmpi-dev", "mpich": "libmpich-dev"}
THREAD_MULTIPLE = 3  # the shim's numbering of MPI thread levels (MPI's order)


class MpiError(RuntimeError):
    """MPI cannot be used, or an MPI call failed; the message says why."""


def launcher():
    """(flavour, size, variable) of the MPI launcher that started this
    process, from the variables it sets (variable: the one giving the size),
    or None. HOROVOD_MPI_FLAVOUR (openmpi|mpich) overrides
    the family (e.g. Intel MPI or MVAPICH, which use MPICH's ABI)."""
    env = os.environ
    forced = settings.read("HOROVOD_MPI_FLAVOUR", env).strip().lower() or None
    if forced is not None and forced not in _LIBRARIES:
        raise MpiError(f"HOROVOD_MPI_FLAVOUR={forced!r} is not known; use openmpi or mpich.")
    if "OMPI_COMM_WORLD_SIZE" in env:  # Open MPI's mpirun (4.x ORTE and 5.x PRRTE)
        return forced or "openmpi", int(env["OMPI_COMM_WORLD_SIZE"]), "OMPI_COMM_WORLD_SIZE"
    if "PMI_SIZE" in env:  # MPICH's Hydra (mpiexec.hydra), Intel MPI, srun --mpi=pmi2
        return forced or "mpich", int(env["PMI_SIZE"]), "PMI_SIZE"
    if "PMIX_RANK" in env and "PMIX_SIZE" in env:
        return forced or "openmpi", int(env["PMIX_SIZE"]), "PMIX_SIZE"
    return None


def _loaded_flavour():
    """The family of an MPI library mpi4py already loaded, or None."""
    mod = sys.modules.get("mpi4py.MPI")
    if mod is None:
        return None
    version = mod.Get_library_version()
    return "openmpi" if "Open MPI" in version else "mpich"


def shim_path(flavour):
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        f"libhvda_mpi_{flavour}.so")


def built_flavours():
    """The MPI families this installation has a shim for."""
    return [f for f in _LIBRARIES if os.path.isfile(shim_path(f))]


class Mpi:
    """The shim over one loaded MPI library. Communicators are Fortran handles
    (ints), as mpi4py's Comm.py2f() gives them."""

    def __init__(self, flavour):
        self.flavour = flavour
        name = _NAMES[flavour]
        shim = shim_path(flavour)
        if not os.path.isfile(shim):
            raise MpiError(
                f"this horovod_accel installation has no {name} support ({shim} is missing): it "
                f"is built when {name}'s headers are present. Install them (e.g. apt-get "
                f"install {_DEV_PACKAGES[flavour]}) and reinstall horovod_accel.")
        wanted = settings.read("HOROVOD_MPI_LIB") or None
        candidates = (wanted,) if wanted else _LIBRARIES[flavour]
        errors = []
        self._lib = None
        for lib in candidates:
            try:
                self._lib = ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
                break
            except OSError as e:
                errors.append(str(e))
        if self._lib is None:
            source = "HOROVOD_MPI_LIB" if wanted else f"the {name} launcher's environment"
            raise MpiError(f"cannot load the {name} library ({', '.join(candidates)}, chosen from "
                           f"{source}): {'; '.join(errors)}. Point HOROVOD_MPI_LIB at the libmpi "
                           f"of the mpirun you launch with.")
        self._shim = ctypes.CDLL(shim)
        self.shim_path = shim
        # The core's compiled HVDA_MPI_SHIM_ABI (hvd.init() has loaded the core).
        from horovod_accel import _core  # noqa: PLC0415
        abi = self._shim.hvda_mpi_shim_abi()
        if abi != _core.MPI_SHIM_ABI:
            raise MpiError(f"{shim} has ABI {abi}, this horovod_accel needs {_core.MPI_SHIM_ABI} "
                           f"(csrc/mpi/hvda_mpi_shim.h); reinstall horovod_accel.")
        self._owns_init = False

    # ------------------------------------------------------------------ calls

    def _call(self, what, *args):
        rc = getattr(self._shim, "hvda_mpi_" + what)(*args)
        if rc != 0:
            buf = ctypes.create_string_buffer(512)
            self._shim.hvda_mpi_error_string(rc, buf, len(buf))
            raise MpiError(f"MPI call {what} failed: {buf.value.decode(errors='replace')} "
                           f"(error {rc}).")

    def _int(self, what, *args):
        out = ctypes.c_int(0)
        self._call(what, *args, ctypes.byref(out))
        return out.value

    def library_version(self):
        buf = ctypes.create_string_buffer(8192)
        self._call("library_version", buf, len(buf))
        return buf.value.decode(errors="replace").strip()

    def initialized(self):
        return bool(self._int("initialized"))

    def finalized(self):
        return bool(self._int("finalized"))

    def ensure_initialized(self):
        """Initializes MPI at MPI_THREAD_MULTIPLE unless someone (mpi4py, the
        user) already has; MPI is then finalized at exit by whoever did."""
        if self.initialized():
            return
        self._int("init_thread", ctypes.c_int(THREAD_MULTIPLE))
        self._owns_init = True
        atexit.register(self._finalize_at_exit)

    def _finalize_at_exit(self):
        if self._owns_init and not self.finalized():
            self._shim.hvda_mpi_finalize()

    def thread_level(self):
        return self._int("query_thread")

    def comm_world(self):
        return self._shim.hvda_mpi_comm_world()

    def rank(self, comm):
        return self._int("comm_rank", ctypes.c_int(comm))

    def size(self, comm):
        return self._int("comm_size", ctypes.c_int(comm))

    def split_shared(self, comm):
        return self._int("comm_split_shared", ctypes.c_int(comm))

    def split(self, comm, color, key):
        return self._int("comm_split", ctypes.c_int(comm), ctypes.c_int(color), ctypes.c_int(key))

    def create_group(self, comm, ranks, tag):
        """A communicator of `ranks` (ranks of comm, in that order); collective
        over those ranks only."""
        arr = (ctypes.c_int * len(ranks))(*ranks)
        return self._int("comm_create_group", ctypes.c_int(comm), arr, ctypes.c_int(len(ranks)),
                         ctypes.c_int(tag))

    def free(self, comm):
        self._call("comm_free", ctypes.c_int(comm))

    def bcast_bytes(self, data, root, comm):
        """root's bytes on every rank (data ignored elsewhere)."""
        n = ctypes.c_int(len(data) if data is not None else 0)
        self._call("bcast_bytes", ctypes.byref(n), ctypes.c_int(4), ctypes.c_int(root),
                   ctypes.c_int(comm))
        buf = ctypes.create_string_buffer(data or b"", n.value)
        self._call("bcast_bytes", buf, n, ctypes.c_int(root), ctypes.c_int(comm))
        return buf.raw

    def allgather_ints(self, value, comm):
        n = self.size(comm)
        out = (ctypes.c_int * n)()
        self._call("allgather_bytes", ctypes.byref(ctypes.c_int(value)), out, ctypes.c_int(4),
                   ctypes.c_int(comm))
        return list(out)


_SESSION = []  # the Mpi of this process once loaded (one MPI library per process)


def session():
    """The process's Mpi, loaded on first use: the family of the library
    mpi4py loaded, else the launcher's."""
    if not _SESSION:
        flavour = _loaded_flavour() or (launcher() or (None,))[0]
        if flavour is None:
            raise MpiError("MPI is needed here, but this process was not started by mpirun and "
                           "mpi4py is not loaded; launch with mpirun, or set "
                           "HOROVOD_MPI_FLAVOUR=openmpi|mpich.")
        _SESSION.append(Mpi(flavour))
    return _SESSION[0]


def active():
    """The loaded Mpi, or None when this process never used MPI."""
    return _SESSION[0] if _SESSION else None


def is_communicator(comm):
    """Whether comm looks like an mpi4py communicator (not a list of ranks)."""
    return comm is not None and hasattr(comm, "py2f") and hasattr(comm, "Get_size")


_RANK_LIST_TAG = 3127  # MPI_Comm_create_group tag of init(comm=[ranks])
_RANK_LIST_COMMS = []  # communicators made for init(comm=[ranks]): alive until exit


def _rank_list_comm(ranks, mpi):
    """The communicator of MPI_COMM_WORLD ranks `ranks` (upstream's
    init(comm=[ranks])); only those ranks may ask for it."""
    world = mpi.comm_world()
    world_rank, world_size = mpi.rank(world), mpi.size(world)
    ranks = sorted(int(r) for r in ranks)
    if not ranks or len(set(ranks)) != len(ranks) or ranks[0] < 0 or ranks[-1] >= world_size:
        raise ValueError(f"init(comm={ranks}) must list distinct ranks of the {world_size} "
                         f"MPI processes (0..{world_size - 1}).")
    if world_rank not in ranks:
        raise ValueError(f"init(comm={ranks}) was called by MPI rank {world_rank}, which is not "
                         f"in the list: only the listed ranks form that job. Call init() with a "
                         f"list that includes this rank (e.g. its own group's), or not at all.")
    handle = mpi.create_group(world, ranks, _RANK_LIST_TAG)
    _RANK_LIST_COMMS.append(handle)
    return handle


def _comm_handle(comm, mpi):
    """Fortran handle of the job's communicator: MPI_COMM_WORLD for None, an
    mpi4py communicator's own, or a new one for a list of world ranks."""
    if comm is None:
        return mpi.comm_world()
    if not is_communicator(comm) and isinstance(comm, (list, tuple, range)):
        return _rank_list_comm(comm, mpi)
    py2f = getattr(comm, "py2f", None)
    if py2f is None:
        raise ValueError(f"init(comm=...) takes an mpi4py communicator or a list of ranks, got "
                         f"{type(comm).__name__}.")
    return int(py2f())


def _store_address(root, same_host, rank):
    """The address at which this rank reaches the store of the communicator's
    rank 0: loopback on rank 0's host, else the first of rank 0's addresses
    that accepts a connection."""
    if same_host:
        return "127.0.0.1"
    addr = StoreClient.first_reachable(root["addrs"], root["port"], timeout=2.0)
    if addr is not None:
        return addr
    if root.get("addrs_error"):
        raise MpiError(f"rank {rank} cannot reach the rendezvous store of rank 0 (host "
                       f"{root['host']}): on rank 0, {root['addrs_error']}")
    raise MpiError(f"rank {rank} cannot reach the rendezvous store of rank 0 (host "
                   f"{root['host']}, port {root['port']}) at any of its addresses "
                   f"{root['addrs']}; set HOROVOD_GLOO_IFACE to the interface the hosts share.")


def _root_addresses():
    """(rank 0's addresses for the other hosts, why there are none or "").
    Runs on rank 0 before the broadcast the others wait in, so it must not
    raise: an interface that does not exist here, or has no IPv4 address,
    gives no address, and the other hosts' ranks fail with the reason
    (_store_address)."""
    iface = settings.read("HOROVOD_GLOO_IFACE")
    if iface:
        try:
            ip = network.interface_ipv4(iface)
        except ValueError as e:
            return [], f"HOROVOD_GLOO_IFACE={iface}: {e}"
        if not ip:
            return [], f"HOROVOD_GLOO_IFACE={iface} has no IPv4 address"
        return [ip], ""
    return [a for a in network.local_addresses() if not a.startswith("127.")], ""


_STORES = []  # the rendezvous store servers this process hosts, alive until exit


def bootstrap(comm=None):
    """Forms the Horovod job from MPI: the ranks of `comm` (default
    MPI_COMM_WORLD; an mpi4py communicator; a list of MPI_COMM_WORLD ranks,
    of which this process must be one) become ranks 0..n-1, with local
    ranks from MPI's shared-memory split and cross ranks across hosts. Rank 0
    serves the rendezvous store the core connects to; its address reaches
    the others by MPI_Bcast. Returns the job's variables (the settings
    table's 'job' ones, for init()'s JobSpec) and publishes the public ones
    (HOROVOD_RANK, ...) in os.environ, as horovodrun would set them.
    Collective over comm; raises MpiError with a reason."""
    launched = launcher()
    mpi = session()
    mpi.ensure_initialized()
    world = mpi.comm_world()
    handle = _comm_handle(comm, mpi)
    size, rank = mpi.size(handle), mpi.rank(handle)
    if comm is None and launched is not None and launched[1] != size:
        raise MpiError(
            f"the MPI launcher started {launched[1]} processes ({launched[2]}={launched[1]}), "
            f"but the MPI library loaded here ({mpi.library_version().splitlines()[0]}) sees a job of "
            f"{size}: the library is not the launcher's. Launch with the mpirun of the same "
            f"MPI (mpirun.openmpi / mpirun.mpich), or point HOROVOD_MPI_LIB at its libmpi.")
    world_id = mpi.rank(world)
    payload = None
    if rank == 0:
        secret = secrets.token_hex(16)
        server = RendezvousStoreServer(secret, host="0.0.0.0")
        port = server.start()
        _STORES.append(server)
        addrs, addrs_error = _root_addresses()
        payload = json.dumps({"host": socket.gethostname(), "port": port, "secret": secret,
                              "addrs": addrs, "addrs_error": addrs_error,
                              "world_id": world_id}).encode()
    root = json.loads(mpi.bcast_bytes(payload, 0, handle).decode())
    local = mpi.split_shared(handle)
    try:
        local_rank, local_size = mpi.rank(local), mpi.size(local)
        same_host = root["world_id"] in mpi.allgather_ints(world_id, local)
    finally:
        mpi.free(local)
    cross = mpi.split(handle, local_rank, rank)
    try:
        cross_rank, cross_size = mpi.rank(cross), mpi.size(cross)
    finally:
        mpi.free(cross)
    addr = _store_address(root, same_host, rank)
    env = {
        "HOROVOD_RANK": str(rank),
        "HOROVOD_SIZE": str(size),
        "HOROVOD_LOCAL_RANK": str(local_rank),
        "HOROVOD_LOCAL_SIZE": str(local_size),
        "HOROVOD_CROSS_RANK": str(cross_rank),
        "HOROVOD_CROSS_SIZE": str(cross_size),
        "HOROVOD_GLOO_RENDEZVOUS_ADDR": addr,
        "HOROVOD_GLOO_RENDEZVOUS_PORT": str(root["port"]),
        "_HOROVOD_SECRET_KEY": root["secret"],
        # For the core's mpi backend and controller (HOROVOD_CPU_OPERATIONS=mpi,
        # HOROVOD_CONTROLLER=mpi): the shim loaded above, in this process, and
        # the communicator whose rank i is Horovod rank i.
        "_HOROVOD_MPI_SHIM": mpi.shim_path,
        "_HOROVOD_MPI_COMM": str(handle),
    }
    os.environ.update({k: v for k, v in env.items() if not k.startswith("_")})
    return env
