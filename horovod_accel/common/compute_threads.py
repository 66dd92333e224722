"""Per-rank compute threads: how many threads each rank's frameworks use for
their math when the user has not said.

Why: torch, OpenMP, MKL, OpenBLAS and TensorFlow each default to one thread
per CPU the process may run on. Several ranks on one host then run several
times as many compute threads as there are cores and lose to DDP, whose
launcher (torchrun) sets OMP_NUM_THREADS=1 per process (docs/design/
compute_threads.md has the measurements). Each rank gets its share instead.

The share (cpu_share): the CPUs of the rank's affinity mask, capped by the
cgroup's CPU quota, divided among the local ranks that share them, at least
1. A rank bound by its launcher to part of the CPUs its cgroup allows
(`mpirun --bind-to core`, `taskset`) is assumed to share that part with
local_size x |mask| / |allowed| ranks (1 for a core of its own, local_size
when unbound), since launchers spread ranks evenly over equal parts.

Who applies it:
  * horovodrun, for each rank it starts on this machine: THREAD_VARIABLES in
    the rank's environment, so the libraries read them as they load
    (launcher_env). It marks them with LAUNCHER_MARK so that hvd.init() knows
    they are not the user's.
  * hvd.init(), in every rank (apply_at_init): under mpirun, plain python,
    Spark, Ray and on the remote hosts of horovodrun, where nothing set the
    variables before the process started. It fills the unset variables in
    os.environ (read by libraries loaded later and by child processes) and
    calls the setters the adapters registered (DEFAULT_RUNTIME.
    add_thread_setter: torch.set_num_threads, tf.config.threading), which
    resize pools that already exist where the framework allows it.

The user decides first: if any of THREAD_VARIABLES is set by the user, none
is touched; HOROVOD_THREADS_PER_RANK (horovodrun --threads-per-rank) is
`auto` (default), a count, or `off` (the frameworks' own defaults).
"""
import dataclasses
import logging
import os

from horovod_accel.common import log, settings

# Variables that size the compute pools, in the order they are documented
# (docs/settings.md): OpenMP (torch's intra-op pool, MXNet's operators), MKL,
# OpenBLAS (NumPy), TensorFlow's intra-op and inter-op pools.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                    "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")
SETTING = "HOROVOD_THREADS_PER_RANK"
# Set by horovodrun beside the THREAD_VARIABLES it filled (value: the count).
LAUNCHER_MARK = "_HOROVOD_THREADS_SET_BY_LAUNCHER"

_OVERRIDE_HINT = (f"set OMP_NUM_THREADS, or {SETTING} (horovodrun --threads-per-rank) to a count "
                  f"or 'off', to choose")


@dataclasses.dataclass(frozen=True)
class Cpus:
    """What bounds the CPUs of one process (read by read_cpus)."""
    affinity: int           # CPUs in the process's affinity mask
    allowed: int            # CPUs its cgroup's cpuset allows (>= affinity)
    quota: float = None     # the cgroup's CPU quota in CPUs (cpu.max), None if unlimited


@dataclasses.dataclass(frozen=True)
class Decision:
    """threads: the count to apply, or None to leave every pool alone.
    why: one line for the INFO message. env: the variables to fill."""
    threads: int
    why: str
    env: dict


def cpu_share(cpus, local_size):
    """The compute threads one of `local_size` ranks on a host gets; >= 1."""
    local_size = max(1, local_size)
    if cpus.affinity >= cpus.allowed:
        sharers = local_size
    else:
        sharers = max(1, round(local_size * cpus.affinity / cpus.allowed))
    n = cpus.affinity // sharers
    if cpus.quota is not None:
        n = min(n, int(cpus.quota // local_size))
    return max(1, n)


def describe_share(cpus, local_size):
    """Why cpu_share says what it says, for the INFO message."""
    bound = cpus.affinity < cpus.allowed
    text = (f"{cpus.affinity} CPU{'s' if cpus.affinity != 1 else ''} in this rank's affinity"
            f"{' (bound by its launcher)' if bound else ''}, {local_size} rank"
            f"{'s' if local_size != 1 else ''} on this host")
    if cpus.quota is not None:
        text += f", cgroup CPU quota {cpus.quota:g}"
    return text


def parse_setting(environ):
    """HOROVOD_THREADS_PER_RANK -> 'auto', 'off' or a count; ValueError if bad."""
    raw = settings.read(SETTING, environ).strip()
    value = raw.lower()
    if value in ("", "auto"):
        return "auto"
    if value in ("off", "0", "none"):
        return "off"
    try:
        n = int(value)
    except ValueError:
        n = -1
    if n < 1:
        raise ValueError(f"{SETTING}={raw!r} is not a thread count: use 'auto' (each rank's share "
                         f"of the host's CPUs), a positive integer, or 'off' (the frameworks' "
                         f"own defaults).")
    return n


def user_variables(environ):
    """The THREAD_VARIABLES the user set (not horovodrun), as {name: value}."""
    if environ.get(LAUNCHER_MARK):
        return {}
    return {v: environ[v] for v in THREAD_VARIABLES if environ.get(v)}


def decide(environ, local_size, cpus):
    """The Decision for a rank with this environment; pure. `cpus` is a Cpus
    or a callable returning one (read only when the share is needed).
    Raises ValueError for a bad HOROVOD_THREADS_PER_RANK."""
    setting = parse_setting(environ)
    chosen = user_variables(environ)
    if chosen:
        shown = ", ".join(f"{k}={v}" for k, v in chosen.items())
        return Decision(None, f"the user's {shown}: horovod_accel sets no thread count", {})
    if setting == "off":
        return Decision(None, f"{SETTING}=off: the frameworks' own defaults", {})
    if setting == "auto":
        cpus = cpus() if callable(cpus) else cpus
        n = cpu_share(cpus, local_size)
        why = f"{n} compute thread{'s' if n != 1 else ''} per rank ({describe_share(cpus, local_size)})"
    else:
        n = setting
        why = f"{n} compute thread{'s' if n != 1 else ''} per rank ({SETTING}={n})"
    ours = bool(environ.get(LAUNCHER_MARK))  # horovodrun's values may be recomputed
    env = {v: str(n) for v in THREAD_VARIABLES if ours or not environ.get(v)}
    return Decision(n, why, env)


# ---------------------------------------------------------------- reading the host

def _parse_cpu_list(text):
    """'0-3,8,10-11' -> 7 (the number of CPUs in a cpuset list); None if unparsable."""
    count = 0
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        try:
            count += (int(hi) - int(lo) + 1) if hi else 1
        except ValueError:
            return None
    return count or None


def _cgroup_dirs(controller):
    """Directories to look in for `controller`'s files of this process's
    cgroup: its own path (v1 or v2, from /proc/self/cgroup), then the root
    of the mount (a container's namespace shows its own cgroup as root)."""
    dirs = []
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if controllers == "":  # the v2 unified hierarchy
            dirs.append("/sys/fs/cgroup" + path.rstrip("/"))
        elif controller in controllers.split(","):
            for name in (controller, controllers):
                dirs.append(f"/sys/fs/cgroup/{name}{path.rstrip('/')}")
    dirs += ["/sys/fs/cgroup", f"/sys/fs/cgroup/{controller}"]
    return dirs


def _read_first(paths):
    for p in paths:
        try:
            with open(p) as f:
                return f.read().strip()
        except OSError:
            continue
    return None


def _read_quota():
    """The cgroup's CPU quota in CPUs, or None when unlimited or unknown."""
    v2 = _read_first(d + "/cpu.max" for d in _cgroup_dirs("cpu"))
    if v2:
        quota, _, period = v2.partition(" ")
        if quota != "max":
            try:
                return int(quota) / int(period or 100000)
            except ValueError:
                return None
        return None
    dirs = _cgroup_dirs("cpu")
    quota = _read_first(d + "/cpu.cfs_quota_us" for d in dirs)
    period = _read_first(d + "/cpu.cfs_period_us" for d in dirs)
    try:
        q, p = int(quota), int(period)
    except (TypeError, ValueError):
        return None
    return q / p if q > 0 and p > 0 else None


def read_cpus():
    """The Cpus of this process, from its affinity mask and its cgroup."""
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = os.cpu_count() or 1
    allowed = None
    for name in ("cpuset.cpus.effective", "cpuset.effective_cpus", "cpuset.cpus"):
        text = _read_first(d + "/" + name for d in _cgroup_dirs("cpuset"))
        allowed = _parse_cpu_list(text) if text else None
        if allowed:
            break
    if not allowed:
        allowed = _parse_cpu_list(_read_first(["/sys/devices/system/cpu/online"]) or "")
    allowed = max(affinity, allowed or os.cpu_count() or affinity)
    return Cpus(affinity=affinity, allowed=allowed, quota=_read_quota())


# ---------------------------------------------------------------- applying

def launcher_env(environ, local_size):
    """horovodrun's variables for a rank it starts on this machine: the
    filled THREAD_VARIABLES plus LAUNCHER_MARK, or {} when the user chose.
    The rank inherits horovodrun's affinity and cgroup, so they are read here.
    Raises ValueError for a bad HOROVOD_THREADS_PER_RANK."""
    d = decide(environ, local_size, read_cpus)
    if d.threads is None:
        return {}
    return dict(d.env, **{LAUNCHER_MARK: str(d.threads)})


def _log(level, rank, message):
    """Logs message as rank `rank` (the core's line format by default; which
    levels show: HOROVOD_LOG_LEVEL, see common/log.py)."""
    log.get_logger(__name__).log(level, message, extra={"rank": rank})


def apply_at_init(rank, local_size, setters, first_time):
    """hvd.init()'s part (see the module docstring). setters: {framework:
    fn(n) -> None, or a sentence saying why the pool keeps its size}. Rank 0
    logs the decision at INFO on the first init of the process; a framework
    that could not follow is a WARNING (on rank 0). Raises ValueError for a
    bad HOROVOD_THREADS_PER_RANK."""
    d = decide(os.environ, local_size, read_cpus)
    if d.threads is None:
        if first_time and rank == 0:
            _log(logging.INFO, rank, f"compute threads: {d.why}.")
        return d
    os.environ.update(d.env)  # only unset variables, or horovodrun's own
    # A pool that cannot be resized any more already follows the variables
    # horovodrun set before the process started, if they hold this count.
    from_launcher = os.environ.get(LAUNCHER_MARK) == str(d.threads)
    applied, refused = [], []
    for framework, setter in setters.items():
        reason = setter(d.threads)
        if reason and not from_launcher:
            refused.append((framework, reason))
        else:
            applied.append((framework, None))
    if first_time and rank == 0:
        how = ("in the environment horovodrun gave the rank" if os.environ.get(LAUNCHER_MARK)
               else "in the environment from hvd.init()")
        frameworks = ", ".join(f for f, _ in applied)
        _log(logging.INFO, rank, f"compute threads: {d.why}: {how}"
             f"{', and applied to ' + frameworks if frameworks else ''}; {_OVERRIDE_HINT}.")
        for framework, reason in refused:
            _log(logging.WARNING, rank, f"compute threads: {framework} keeps its own count: {reason}")
    return d
