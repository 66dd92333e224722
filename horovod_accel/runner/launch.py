"""`horovodrun` (console script): upstream Horovod's launcher, Gloo controller
(`--mpi` hands the launch to mpirun instead: mpi_launch.py).

    horovodrun -np 4 -H host1:2,host2:2 python train.py

Starts the rendezvous store (horovod_accel/rendezvous/server.py), one process per rank (local
or over ssh) with the HOROVOD_* environment below, forwards their output and
stops the whole job when one rank fails (job.py).

Env contract, per rank (rank_process.slot_env):
  HOROVOD_RANK, HOROVOD_SIZE, HOROVOD_LOCAL_RANK, HOROVOD_LOCAL_SIZE,
  HOROVOD_CROSS_RANK, HOROVOD_CROSS_SIZE, HOROVOD_HOSTNAME (as given in -H),
  HOROVOD_GLOO_RENDEZVOUS_ADDR, HOROVOD_GLOO_RENDEZVOUS_PORT,
  _HOROVOD_SECRET_KEY (the store's per-job secret), HOROVOD_CONTROLLER=gloo,
  PYTHONUNBUFFERED=1 (unless set), plus the tunables of tunables.py
  (e.g. HOROVOD_START_TIMEOUT from --start-timeout). HOROVOD_CPU_OPERATIONS is
  left alone: the core picks shared memory first on its own.
  Ranks started on this machine also get their share of its CPUs as
  OMP_NUM_THREADS & co., unless the user set them (common/compute_threads.py).
"""
import functools
import os
import secrets
import sys

from horovod_accel.common import compute_threads, settings
from horovod_accel.rendezvous import network
from horovod_accel.rendezvous.server import RendezvousStoreServer
from horovod_accel.runner import args as args_mod
from horovod_accel.runner import hosts as hosts_mod
from horovod_accel.runner import job, mpi_launch, output, tunables
from horovod_accel.runner.check_build import check_build


class UsageError(ValueError):
    pass


def _host_list(a):
    if a.hosts:
        return hosts_mod.parse_hosts(a.hosts)
    if a.hostfile:
        return hosts_mod.parse_hostfile(a.hostfile)
    return [hosts_mod.Host("localhost", a.num_proc)]


def _start_timeout(a):
    if a.start_timeout is not None:
        return float(a.start_timeout)
    try:
        return settings.read("HOROVOD_START_TIMEOUT")
    except ValueError as e:
        raise UsageError(str(e)) from None


def store_address(host, nics):
    """The address at which ranks on `host` reach the store on this machine."""
    return "127.0.0.1" if network.is_local_host(host) else network.driver_address_for(host, nics)


def plan(a):
    """Everything but the secret and port: (slots, local hostnames, bind address,
    {hostname: store address seen from it}). Raises ValueError on bad input."""
    slots = hosts_mod.assign_slots(_host_list(a), a.num_proc)
    names = list(dict.fromkeys(s.hostname for s in slots))
    local = {h for h in names if network.is_local_host(h)}
    store_addr = {h: store_address(h, a.nics) for h in names}
    bind = "127.0.0.1" if len(local) == len(names) else "0.0.0.0"
    return slots, local, bind, store_addr


def _choose_gloo_iface(env, store_addr, local, verbose):
    """Ranks on several hosts need an address the other hosts reach. Unless
    the user named one (HOROVOD_GLOO_IFACE, --network-interfaces), every rank
    gets the interface this machine routes to the remote hosts from, as
    upstream's launcher does; interface names must then be the same on every
    host (else name one with --network-interfaces)."""
    remote = [h for h in store_addr if h not in local]
    if not remote or env.get("HOROVOD_GLOO_IFACE"):
        return
    iface = network.interface_with_address(store_addr[remote[0]])
    if iface is None:
        return  # no interface owns the routed address (NAT, ...): Gloo uses the host name
    env["HOROVOD_GLOO_IFACE"] = iface
    if verbose:
        output.console_message(f"ranks talk over interface {iface} (the route to {remote[0]}); "
                               f"--network-interfaces picks another")


def base_env(a):
    """The environment every rank starts from: horovodrun's own, plus the
    HOROVOD_* variables of the flags in `a`. ValueError for a bad
    HOROVOD_THREADS_PER_RANK (per-rank values are added by launch_rank)."""
    env = dict(os.environ)
    env.update(tunables.env_from_args(a))
    env.setdefault("PYTHONUNBUFFERED", "1")
    compute_threads.parse_setting(env)
    return env


def run(a):
    """Runs the job described by parsed args; returns the exit code."""
    env = base_env(a)
    if a.use_mpi:
        return mpi_launch.run(a, env)
    if getattr(a, "elastic", False):
        return _run_elastic(a, env)
    slots, local, bind, store_addr = plan(a)
    _choose_gloo_iface(env, store_addr, local, a.verbose)
    start_timeout = _start_timeout(a)
    secret = secrets.token_hex(32)
    if a.output_filename:
        os.makedirs(a.output_filename, exist_ok=True)
    with RendezvousStoreServer(secret, host=bind, verbose=a.verbose) as store:
        if a.verbose:
            output.console_message(f"{len(slots)} ranks on {', '.join(store_addr)}; command: "
                                   f"{' '.join(a.command)}")
        spec = job.JobSpec(slots=slots, command=a.command, env=env, secret=secret,
                           store_port=store.port, store_addr=store_addr, local_hosts=local,
                           output_dir=a.output_filename,
                           timestamp_output=a.prefix_output_with_timestamp, verbose=a.verbose,
                           ssh_port=a.ssh_port, ssh_identity_file=a.ssh_identity_file,
                           start_timeout=start_timeout)
        return job.run_job(spec)


def _run_elastic(a, env):
    return run_elastic_job(a, env)[0]


def run_elastic_job(a, env, prepare=None, collect=None):
    """Elastic mode (elastic/driver.py): hosts from the discovery script, or
    the fixed -H/--hostfile hosts. prepare(store_server), if given, runs
    before the first worker starts (horovod.run stores its call there), and
    collect(driver) once the job ended, while the store still serves.
    Returns (exit code, the ElasticDriver, what collect returned)."""
    from horovod_accel.runner.elastic import discovery  # noqa: PLC0415
    from horovod_accel.runner.elastic.driver import ElasticDriver, ElasticSpec  # noqa: PLC0415
    store_addr = functools.lru_cache(maxsize=None)(lambda host: store_address(host, a.nics))

    if a.host_discovery_script:
        disc = discovery.HostDiscoveryScript(a.host_discovery_script, a.slots)
        bind = "0.0.0.0"  # hosts are not known yet
    else:
        fixed = _host_list(a)
        if len(fixed) < 2:
            raise ValueError("fault tolerance on fixed hosts (--min-np with -H/--hostfile) needs "
                             "at least 2 hosts: a failure blacklists its host, so one host "
                             "cannot survive it; add a host or use --host-discovery-script")
        disc = discovery.FixedHosts(fixed)
        local = {h.name for h in fixed if network.is_local_host(h.name)}
        bind = "127.0.0.1" if len(local) == len(fixed) else "0.0.0.0"
        _choose_gloo_iface(env, {h.name: store_addr(h.name) for h in fixed}, local, a.verbose)
    gloo_timeout = settings.read("HOROVOD_GLOO_TIMEOUT_SECONDS", env)
    secret = secrets.token_hex(32)
    if a.output_filename:
        os.makedirs(a.output_filename, exist_ok=True)
    with RendezvousStoreServer(secret, host=bind, verbose=a.verbose) as store:
        spec = ElasticSpec(
            num_proc=a.num_proc, min_np=a.min_num_proc, max_np=a.max_num_proc, discovery=disc,
            command=a.command, env=env, secret=secret, store=store, store_port=store.port,
            store_addr=store_addr,
            is_local=network.is_local_host, elastic_timeout=a.elastic_timeout,
            reset_limit=a.reset_limit, cooldown_range=a.cooldown_range,
            ready_timeout=max(60.0, 2 * gloo_timeout), output_dir=a.output_filename,
            timestamp_output=a.prefix_output_with_timestamp, verbose=a.verbose,
            ssh_port=a.ssh_port, ssh_identity_file=a.ssh_identity_file,
            start_timeout=_start_timeout(a))
        if prepare is not None:
            prepare(store)
        driver = ElasticDriver(spec)
        code = driver.run()
        return code, driver, (collect(driver) if collect is not None else None)


def run_commandline(argv=None):
    """Entry point of the `horovodrun` console script; exits the process."""
    a = args_mod.parse_args(argv)
    if a.check_build:
        sys.exit(check_build(a.verbose))
    try:
        code = run(a)
    # The command line's own error report (as argparse's), not library logging.
    except ValueError as e:  # bad hosts, -np, interfaces: the user's to fix
        print(f"horovodrun: error: {e}", file=sys.stderr)
        code = 2
    except OSError as e:
        print(f"horovodrun: error: {e}", file=sys.stderr)
        code = 1
    sys.exit(code)


if __name__ == "__main__":
    run_commandline()
