"""Exceptions shared by every framework adapter (upstream `horovod.common.exceptions`)."""


class HorovodInternalError(RuntimeError):
    """A collective operation failed: cross-rank mismatch (dtype, shape, root
    rank, ...), a lost peer, or Horovod being shut down.

    Raised by `synchronize()` (and every blocking op built on it). In elastic
    mode upstream treats it as recoverable and resets the job.
    """


class HostsUpdatedInterrupt(RuntimeError):
    """Elastic mode: the set of hosts changed and the job must re-rendezvous.

    `skip_sync` tells the elastic driver whether state may be restored
    without a broadcast from rank 0.
    """

    def __init__(self, skip_sync):
        super().__init__(f"hosts updated (skip_sync={skip_sync})")
        self.skip_sync = skip_sync


def get_version_mismatch_message(name, version, installed_version):
    return (f"Framework {name} installed with version {installed_version} but found version "
            f"{version}.\nThis can result in unexpected behavior including runtime errors.\n"
            f"Reinstall Horovod using `pip install --no-cache-dir` to build with the new version.")


class HorovodVersionMismatchError(ImportError):
    """The framework version differs from the one Horovod was built against.

    Kept for upstream compatibility: horovod_accel's core is never compiled
    against a framework, so it never raises this itself.
    """

    def __init__(self, name, version, installed_version):
        super().__init__(get_version_mismatch_message(name, version, installed_version))
        self.name = name
        self.version = version
        self.installed_version = installed_version
