"""`from horovod.X import *` works for every public module of the adapters:
each name a module's __all__ lists exists (a stale entry makes the star
import raise AttributeError, as horovod.tensorflow.mpi_ops once did)."""
import subprocess
import sys

from launch_util import REPO

MODULES = ["horovod.torch", "horovod.torch.mpi_ops", "horovod.tensorflow",
           "horovod.tensorflow.mpi_ops", "horovod.tensorflow.keras", "horovod.keras", "horovod.jax",
           "horovod.jax.mpi_ops"]


def test_star_import_of_every_public_module():
    lines = [f"from {m} import *" for m in MODULES]
    lines += [f"import {m} as _m; assert all(hasattr(_m, n) for n in getattr(_m, '__all__', ())), "
              f"[n for n in _m.__all__ if not hasattr(_m, n)]" for m in MODULES]
    proc = subprocess.run([sys.executable, "-c", "\n".join(lines)], cwd=REPO, capture_output=True,
                          text=True, timeout=170)
    assert proc.returncode == 0, proc.stderr[-3000:]
