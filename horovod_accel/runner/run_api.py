"""`horovod.run(func, ...)` (upstream's horovod.runner.run): runs
`func(*args, **kwargs)` on every rank of a new job and returns the ranks'
return values as a list in rank order.

    import horovod
    def train(lr):
        import horovod.torch as hvd
        hvd.init()
        ...
        return hvd.rank()
    horovod.run(train, args=(0.1,), num_proc=2)   # -> [0, 1]

It goes through horovodrun's own launcher (launch.plan, job.py): the same
hosts/slots, environment, rank-prefixed output and fail-fast. The call is
cloudpickled into the job's rendezvous store, which every rank reaches (ssh
ranks on other hosts too); each rank runs `python -m
horovod_accel.runner.run_task` with `executable` (default sys.executable),
which runs the call and stores its result (NOTE [horovod.run store records]
in run_task.py). With use_mpi=True the job is started by mpirun as
`horovodrun --mpi` does (mpi_launch.py) and the caller serves a store for the
call alone.

Failures raise in the caller: RankError (a RuntimeError, as upstream raises)
naming the first rank that failed, with the exception it raised (type,
message, its traceback text; the exception itself as __cause__ where it
could be pickled), or how it died and its last stderr lines. The launcher's
fail-fast stops the other ranks within seconds, so a failed job never hangs.
"""
import os
import secrets
import signal
import sys
import warnings

from horovod_accel.runner import call_records as records_mod
from horovod_accel.runner import run_task as task
from horovod_accel.runner.rank_error import RankError  # noqa: F401 - part of this module's API



CALLER = "horovod.run"


def _check_args(func, num_proc, hosts, hostfile, use_gloo, use_mpi, start_timeout):
    if hosts is not None and hostfile is not None:
        raise ValueError("horovod.run: give hosts or hostfile, not both")
    if use_gloo and use_mpi:
        raise ValueError("horovod.run: use_gloo and use_mpi cannot both be True")
    if not callable(func):
        raise TypeError(f"horovod.run: func must be callable, got {type(func).__name__}")
    if isinstance(num_proc, bool) or not isinstance(num_proc, int) or num_proc < 1:
        raise ValueError(f"horovod.run: num_proc must be a positive integer, got {num_proc!r}")
    if start_timeout is not None and (isinstance(start_timeout, bool) or
                                      not isinstance(start_timeout, (int, float)) or
                                      start_timeout < 0):
        raise ValueError(f"horovod.run: start_timeout must be a number of seconds >= 0, got "
                         f"{start_timeout!r}")


def _launcher_args(num_proc, hosts, hostfile, start_timeout, ssh_port, ssh_identity_file,
                   output_filename, verbose, use_mpi, mpi_args, nics, command):
    """horovodrun's parsed-args namespace for these settings (defaults for the rest)."""
    from horovod_accel.runner import args as args_mod  # noqa: PLC0415
    a = args_mod.build_parser().parse_args([])
    if isinstance(hosts, (list, tuple)):
        hosts = ",".join(hosts)
    a.num_proc = num_proc
    a.hosts = hosts
    a.hostfile = hostfile
    a.start_timeout = start_timeout
    a.ssh_port = ssh_port
    a.ssh_identity_file = ssh_identity_file
    a.output_filename = output_filename
    a.verbose = bool(verbose)
    a.use_mpi = bool(use_mpi)
    a.use_gloo = not a.use_mpi
    a.mpi_args = mpi_args
    a.nics = nics
    a.command = command
    return a


def _run_gloo(a, env, payload):
    from horovod_accel.runner import job, launch  # noqa: PLC0415
    from horovod_accel.rendezvous.client import StoreClient  # noqa: PLC0415
    from horovod_accel.rendezvous.server import RendezvousStoreServer  # noqa: PLC0415
    slots, local, bind, store_addr = launch.plan(a)
    launch._choose_gloo_iface(env, store_addr, local, a.verbose)  # noqa: SLF001 - as horovodrun
    start_timeout = launch._start_timeout(a)  # noqa: SLF001
    secret = secrets.token_hex(32)
    if a.output_filename:
        os.makedirs(a.output_filename, exist_ok=True)
    describe = records_mod.by_host({s.rank: s.hostname for s in slots})
    with RendezvousStoreServer(secret, host=bind, verbose=a.verbose) as server, \
            StoreClient("127.0.0.1", server.port, secret, timeout=max(start_timeout, 30)) as store:
        records_mod.store_call(store, payload)
        spec = job.JobSpec(slots=slots, command=a.command, env=env, secret=secret,
                           store_port=server.port, store_addr=store_addr, local_hosts=local,
                           output_dir=a.output_filename, verbose=a.verbose, ssh_port=a.ssh_port,
                           ssh_identity_file=a.ssh_identity_file, start_timeout=start_timeout)
        code, failed, launch_error, signum = job.run_job_outcome(spec)
        records = records_mod.read(store, len(slots))
    if launch_error is not None:
        raise RuntimeError(f"horovod.run: {launch_error}")
    if signum is not None:
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise RuntimeError(f"horovod.run: the job was stopped by {signal.Signals(signum).name}")
    if failed is not None:
        # A rank that died without a record (killed, os._exit, a crash) is the
        # cause: the exceptions of the others are its consequences. Else the
        # first exception caught is, even if its rank exited after others.
        first = records_mod.first_raised(records)
        if failed.rank not in records or first is None:
            raise records_mod.died_error(CALLER, failed, describe, failed.rank in records)
        err, exc = records_mod.raised_error(CALLER, first, describe, records[first])
        raise err from exc
    if code != 0:  # not expected: every non-zero exit names a failed rank
        raise RuntimeError(f"horovod.run: the job failed with exit code {code}")
    return records_mod.results(CALLER, records, len(slots), describe)


def _run_elastic(a, env, payload):
    """Elastic horovod.run (horovodrun's elastic driver): the results of the
    last round's ranks, in rank order."""
    from horovod_accel.runner import launch  # noqa: PLC0415
    from horovod_accel.rendezvous.client import StoreClient  # noqa: PLC0415
    out = {}

    def prepare(server):
        out["store"] = StoreClient("127.0.0.1", server.port, server.secret, timeout=30)
        records_mod.store_call(out["store"], payload)

    def collect(driver):
        return records_mod.read(out["store"], driver.final_size())

    try:
        code, driver, records = launch.run_elastic_job(a, env, prepare, collect)
    finally:
        if "store" in out:
            out["store"].close()
    if driver.signum is not None:
        if driver.signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise RuntimeError(f"horovod.run: the job was stopped by "
                           f"{signal.Signals(driver.signum).name}")
    if code != 0:
        raise RuntimeError(f"horovod.run: {driver.error or f'exit code {code}'}")
    return records_mod.results(CALLER, records, driver.final_size(), records_mod.by_host({}))


def _run_mpi(a, env, payload):
    from horovod_accel.runner import launch, mpi_launch  # noqa: PLC0415
    from horovod_accel.rendezvous.client import StoreClient  # noqa: PLC0415
    from horovod_accel.rendezvous.server import RendezvousStoreServer  # noqa: PLC0415
    _, local, bind, store_addr = launch.plan(a)  # checks hosts and num_proc
    remote = [h for h in store_addr if h not in local]
    # One address for every rank (mpirun starts them all with one environment):
    # the one the first remote host reaches this machine at.
    addr = store_addr[remote[0]] if remote else "127.0.0.1"
    secret = secrets.token_hex(32)
    with RendezvousStoreServer(secret, host=bind, verbose=a.verbose) as server, \
            StoreClient("127.0.0.1", server.port, secret, timeout=30) as store:
        records_mod.store_call(store, payload)
        env[task.STORE_ENV] = f"{addr}:{server.port}"
        env[task.SECRET_ENV] = secret
        code = mpi_launch.run(a, env)
        records = records_mod.read(store, a.num_proc)
    if code != 0:
        first = records_mod.first_raised(records)
        if first is not None:
            err, exc = records_mod.raised_error(CALLER, first, records_mod.by_host({}),
                                                records[first])
            raise err from exc
        if code == 130:
            raise KeyboardInterrupt
        missing = [r for r in range(a.num_proc) if r not in records]
        raise RuntimeError(f"horovod.run: mpirun failed with exit code {code}; ranks without a "
                           f"result: {missing or 'none'} (mpirun's output above tells more)")
    return records_mod.results(CALLER, records, a.num_proc, records_mod.by_host({}))


def run(func, args=(), kwargs=None, num_proc=1, min_num_proc=None, max_num_proc=None, slots=None,
        reset_limit=None, cooldown_range=None, hosts=None, hostfile=None,
        host_discovery_script=None, start_timeout=None, ssh_port=None, ssh_identity_file=None,
        disable_cache=None, output_filename=None, verbose=None, use_gloo=None, use_mpi=None,
        mpi_args=None, network_interface=None, network_interfaces=None, executable=None,
        np=None, min_np=None, max_np=None, elastic_timeout=None):
    """Runs `func(*args, **kwargs)` on `num_proc` ranks of a new Horovod job
    and returns their return values as a list indexed by rank.

    Parameters are upstream's (horovod.runner.run, 0.28.1): hosts ('h1:2,h2:2',
    or a list of 'host:slots'), hostfile, start_timeout, ssh_port,
    ssh_identity_file, output_filename (<dir>/rank.<rank>/{stdout,stderr}),
    verbose, use_gloo (the default launcher) or use_mpi (mpirun, with
    mpi_args), network_interfaces (list; network_interface: a comma string,
    deprecated), executable (the Python that runs the ranks; default
    sys.executable); np, min_np and max_np are deprecated spellings of
    num_proc, min_num_proc and max_num_proc. disable_cache is accepted and
    ignored (nothing is cached). min_num_proc or host_discovery_script make
    the job elastic, as in horovodrun (with max_num_proc, slots, reset_limit,
    cooldown_range, elastic_timeout): func then runs hvd.elastic.run itself,
    and the results are those of the last round's ranks.

    func, args and kwargs must be picklable with cloudpickle, and so must
    func's return value. The ranks' output goes to this process's stdout and
    stderr, prefixed like horovodrun's. Raises RankError (a RuntimeError)
    naming the first rank that failed; ValueError/TypeError for bad arguments.
    """
    if network_interface:
        network_interfaces = network_interface.split(",")
        warnings.warn("network_interface is deprecated, use network_interfaces instead",
                      DeprecationWarning, stacklevel=2)
    deprecated = {"np": (np, "num_proc"), "min_np": (min_np, "min_num_proc"),
                  "max_np": (max_np, "max_num_proc")}
    for old, (value, new) in deprecated.items():
        if value is not None:
            warnings.warn(f"{old} is deprecated, use {new} instead", DeprecationWarning,
                          stacklevel=2)
    if np is not None:
        num_proc = np
    if min_np is not None:
        min_num_proc = min_np
    if max_np is not None:
        max_num_proc = max_np
    _check_args(func, num_proc, hosts, hostfile, use_gloo, use_mpi, start_timeout)
    if mpi_args and not use_mpi:
        warnings.warn("horovod.run: mpi_args only apply with use_mpi=True; ignoring them",
                      stacklevel=2)
    if isinstance(network_interfaces, str):
        network_interfaces = network_interfaces.split(",")
    nics = list(dict.fromkeys(n for n in network_interfaces or () if n)) or None
    command = [executable or sys.executable, "-m", "horovod_accel.runner.run_task"]
    a = _launcher_args(num_proc, hosts, hostfile, start_timeout, ssh_port, ssh_identity_file,
                       output_filename, verbose, use_mpi, mpi_args, nics, command)
    payload = records_mod.pack_call(CALLER, func, args, {} if kwargs is None else kwargs)
    from horovod_accel.runner.elastic import settings as elastic_settings  # noqa: PLC0415
    a.elastic = elastic_settings.is_elastic(min_num_proc, host_discovery_script)
    if a.elastic:
        (a.num_proc, a.min_num_proc, a.max_num_proc, a.elastic_timeout) = \
            elastic_settings.resolve(num_proc, min_num_proc, max_num_proc, slots,
                                     host_discovery_script, bool(a.hosts or a.hostfile),
                                     elastic_timeout, reset_limit, cooldown_range, a.use_mpi)
        a.slots, a.reset_limit, a.host_discovery_script = slots, reset_limit, host_discovery_script
        a.cooldown_range = tuple(cooldown_range) if cooldown_range is not None else None
    else:
        elastic_settings.reject_elastic_only(
            [("max_num_proc", max_num_proc), ("slots", slots), ("reset_limit", reset_limit),
             ("cooldown_range", cooldown_range), ("elastic_timeout", elastic_timeout)],
            "min_num_proc or host_discovery_script")

    from horovod_accel.runner import launch  # noqa: PLC0415
    env = launch.base_env(a)
    if a.elastic:
        return _run_elastic(a, env, payload)
    if a.use_mpi:
        return _run_mpi(a, env, payload)
    return _run_gloo(a, env, payload)
