"""The elastic flags' rules, shared by horovodrun (args.py) and horovod.run
(run_api.py): upstream's names and defaults, with the checks upstream lacked.
Pure; raises ValueError with the message a user needs."""
import os

DEFAULT_ELASTIC_TIMEOUT_S = 600


def is_elastic(min_num_proc, host_discovery_script):
    """Elastic mode is on when --host-discovery-script or --min-np is given."""
    return host_discovery_script is not None or min_num_proc is not None


def reject_elastic_only(options, enable_with):
    """options: [(the option as the user spelt it, its value)]. ValueError
    for the first one given: they only apply to elastic jobs, which
    `enable_with` (how this caller turns elastic mode on) would start."""
    for name, value in options:
        if value is not None:
            raise ValueError(f"{name} only applies to elastic jobs; give {enable_with} (or drop "
                             "it)")


def resolve(num_proc, min_num_proc, max_num_proc, slots, host_discovery_script, has_fixed_hosts,
            elastic_timeout, reset_limit, cooldown_range, use_mpi=False):
    """Checks the elastic arguments; returns (num_proc, min_np, max_np,
    elastic_timeout_s) with the defaults filled in (min_np = num_proc;
    max_np None = no limit; the timeout from HOROVOD_ELASTIC_TIMEOUT or 600)."""
    if use_mpi:
        raise ValueError("elastic mode (--min-np / --host-discovery-script) runs on Gloo; drop "
                         "--mpi")
    if host_discovery_script is None and not has_fixed_hosts:
        raise ValueError("elastic mode needs hosts: --host-discovery-script SCRIPT, or -H / "
                         "--hostfile for fault tolerance on fixed hosts")
    if num_proc is None:
        num_proc = min_num_proc
    if num_proc is None:
        raise ValueError("elastic mode needs -np (the workers to start with) or --min-np")
    min_np = num_proc if min_num_proc is None else min_num_proc
    for flag, v in (("-np", num_proc), ("--min-np", min_np)):
        if v < 1:
            raise ValueError(f"{flag} {v} must be at least 1")
    if min_np > num_proc:
        raise ValueError(f"--min-np {min_np} is larger than -np {num_proc}")
    if max_num_proc is not None and max_num_proc < num_proc:
        raise ValueError(f"--max-np {max_num_proc} is smaller than -np {num_proc}")
    if slots is not None and slots < 1:
        raise ValueError(f"--slots-per-host {slots} must be at least 1")
    if reset_limit is not None and reset_limit < 0:
        raise ValueError(f"--reset-limit {reset_limit} must be >= 0")
    if cooldown_range is not None:
        lo, hi = cooldown_range
        if not 1 <= lo <= hi:
            raise ValueError(f"--blacklist-cooldown-range {lo} {hi}: expected 1 <= MIN <= MAX "
                             "(seconds)")
    if elastic_timeout is None:
        env = os.environ.get("HOROVOD_ELASTIC_TIMEOUT")
        try:
            elastic_timeout = float(env) if env else DEFAULT_ELASTIC_TIMEOUT_S
        except ValueError:
            raise ValueError(f"HOROVOD_ELASTIC_TIMEOUT={env!r} is not a number of seconds") from None
    if elastic_timeout < 0:
        raise ValueError(f"--elastic-timeout {elastic_timeout} must be >= 0")
    return num_proc, min_np, max_num_proc, float(elastic_timeout)
