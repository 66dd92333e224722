"""The JobSpec init() hands the core: who this rank is and how it reaches its
peers, read once, here, from what the launcher gave this process.

Every launcher states the job in the same variables (the table's 'job'
settings: HOROVOD_RANK, ..., HOROVOD_GLOO_RENDEZVOUS_ADDR/PORT,
_HOROVOD_SECRET_KEY): horovodrun in the rank's environment, the MPI
bootstrap and the elastic driver's assignment as a dict that init() also
publishes in os.environ for the user's program (upstream's contract). The
core itself never reads them from the environment (docs/design/runtime.md).
"""
import os

from horovod_accel.common import settings
from horovod_accel.common.default_runtime import DEFAULT_RUNTIME

# JobSpec field -> the setting it comes from.
_FIELDS = {
    "rank": "HOROVOD_RANK",
    "size": "HOROVOD_SIZE",
    "local_rank": "HOROVOD_LOCAL_RANK",
    "local_size": "HOROVOD_LOCAL_SIZE",
    "cross_rank": "HOROVOD_CROSS_RANK",
    "cross_size": "HOROVOD_CROSS_SIZE",
    "store_addr": "HOROVOD_GLOO_RENDEZVOUS_ADDR",
    "store_port": "HOROVOD_GLOO_RENDEZVOUS_PORT",
    "secret": "_HOROVOD_SECRET_KEY",
    "elastic_round": "_HOROVOD_ELASTIC_ROUND",
    "mpi_shim": "_HOROVOD_MPI_SHIM",
    "mpi_comm": "_HOROVOD_MPI_COMM",
}


def job_spec(env=None):
    """A `_core.JobSpec` from `env` (default os.environ); ValueError naming
    the variable when one does not parse."""
    env = os.environ if env is None else env
    spec = DEFAULT_RUNTIME.core().JobSpec()
    for field, name in _FIELDS.items():
        setattr(spec, field, settings.read(name, env))
    return spec
