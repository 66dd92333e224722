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


def job_spec(env=None):
    """A `_core.JobSpec` from `env` (default os.environ): every 'job' setting
    of the table whose field JobSpec has (all but HOROVOD_HOSTNAME, which the
    core never needs). ValueError naming the variable when one does not parse."""
    env = os.environ if env is None else env
    spec = DEFAULT_RUNTIME.core().JobSpec()
    for row in settings.table():
        if row["scope"] == "job" and hasattr(spec, row["field"]):
            setattr(spec, row["field"], settings.read(row["name"], env))
    return spec
