"""`RayExecutor.create_settings(...)`: the job settings object (upstream's
MiniSettings; its field names are kept, since callers such as Ray Train's
Horovod backend read them).

Pure data, no I/O except create_settings writing `ssh_str` to a key file.
"""
import dataclasses
import os


@dataclasses.dataclass
class MiniSettings:
    """Settings of a RayExecutor job.

    timeout_s: seconds a rank waits for the others to join at hvd.init()
        (exported to the ranks as HOROVOD_START_TIMEOUT).
    placement_group_timeout_s: seconds start() waits for Ray to reserve the
        workers' resources before raising TimeoutError.
    nics: network interfaces the ranks may use, in order of preference (the
        first becomes HOROVOD_GLOO_IFACE); None: each rank uses the interface
        of its Ray node's address (utils.detect_nics).
    verbose: 0 quiet, 1 (default) the job's progress, 2 more.
    ssh_port, ssh_identity_file: kept for upstream's callers; Ray reaches
        the nodes, so nothing here uses ssh.
    key: kept for upstream's callers and ignored: every job makes its own
        rendezvous secret (coordinator.py), so no secret outlives its job.
    elastic: set by RayExecutor (True with min_workers).
    """
    nics: list = None
    verbose: int = 1
    key: str = None
    ssh_port: int = None
    ssh_identity_file: str = None
    timeout_s: int = 300
    placement_group_timeout_s: int = 100
    elastic: bool = False


def _write_key_file(path, contents):
    """Writes an ssh private key readable only by this user; never replaces
    an existing file (upstream's rule: ssh_str only fills a missing file)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    with os.fdopen(fd, "w") as f:
        f.write(contents)


def create_settings(timeout_s=30, ssh_identity_file=None, ssh_str=None,
                    placement_group_timeout_s=100, nics=None, verbose=1):
    """Upstream's RayExecutor.create_settings (plus `verbose`, which upstream's
    own documentation passes). Raises ValueError for values that cannot work."""
    if ssh_str and not ssh_identity_file:
        raise ValueError("create_settings: ssh_str (a private key) needs ssh_identity_file, the "
                         "path to write it to")
    for name, value in (("timeout_s", timeout_s),
                        ("placement_group_timeout_s", placement_group_timeout_s)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ValueError(f"create_settings: {name} must be a positive number of seconds, "
                             f"got {value!r}")
    if isinstance(nics, str):
        nics = nics.split(",")
    nics = list(dict.fromkeys(n for n in nics or () if n)) or None
    if ssh_str:
        _write_key_file(ssh_identity_file, ssh_str)
    return MiniSettings(nics=nics, verbose=verbose,
                        ssh_identity_file=ssh_identity_file, timeout_s=timeout_s,
                        placement_group_timeout_s=placement_group_timeout_s)
