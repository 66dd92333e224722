"""`horovodrun --mpi`: starts the job through the MPI launcher (`mpirun` on
PATH, Open MPI or MPICH's Hydra), as upstream does. The ranks form the job
from MPI at hvd.init() (docs/design/mpi.md), so no rendezvous store runs
here; horovodrun's settings reach them as environment variables.

    horovodrun --mpi -np 4 -H a:2,b:2 [--mpi-args "..."] [--binding-args "..."] python train.py
"""
import os
import shlex
import shutil
import subprocess

from horovod_accel.runner import output

# Defaults of upstream's mpi_run when --binding-args is not given.
_DEFAULT_BINDING = {"openmpi": ["-bind-to", "none", "-map-by", "slot"], "mpich": []}


def flavour_of(mpirun):
    """'openmpi' or 'mpich' from `mpirun --version`; ValueError otherwise."""
    try:
        r = subprocess.run([mpirun, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ValueError(f"cannot run '{mpirun} --version': {e}") from None
    text = r.stdout + r.stderr
    if "Open MPI" in text or "OpenRTE" in text:
        return "openmpi"
    if "HYDRA" in text or "Intel(R) MPI" in text or "MPICH" in text:
        return "mpich"
    raise ValueError(f"'{mpirun}' is neither Open MPI's nor Hydra's (MPICH, Intel MPI) mpirun; "
                     f"its --version says: {text.strip()[:200]!r}")


def command(a, flavour, mpirun, env_names):
    """argv of the MPI launch of parsed args `a`; env_names: variables to
    forward to the ranks (Open MPI passes only named ones to remote hosts)."""
    argv = [mpirun]
    if flavour == "openmpi" and os.geteuid() == 0:
        argv.append("--allow-run-as-root")
    argv += ["-np", str(a.num_proc)]
    if a.hosts:
        argv += ["-H" if flavour == "openmpi" else "-hosts", a.hosts]
    elif a.hostfile:
        argv += ["--hostfile" if flavour == "openmpi" else "-f", a.hostfile]
    argv += shlex.split(a.binding_args) if a.binding_args else _DEFAULT_BINDING[flavour]
    if flavour == "openmpi":  # Hydra passes the whole environment by default
        for name in sorted(env_names):
            argv += ["-x", name]
    if a.mpi_args:
        argv += shlex.split(a.mpi_args)
    return argv + list(a.command)


def run(a, env):
    """Runs the job through mpirun with environment env; returns its exit code."""
    mpirun = shutil.which("mpirun", path=env.get("PATH"))
    if mpirun is None:
        raise ValueError("--mpi needs an MPI launcher, but mpirun is not on PATH (install "
                         "openmpi-bin or mpich), or drop --mpi to launch with Gloo.")
    flavour = flavour_of(mpirun)
    forwarded = {n for n in env if n.startswith(("HOROVOD_", "PYTHON", "OMP_", "NCCL_"))}
    forwarded |= {n for n in ("PATH", "LD_LIBRARY_PATH") if n in env}
    argv = command(a, flavour, mpirun, forwarded)
    if a.verbose:
        output.console_message(" ".join(shlex.quote(x) for x in argv))
    try:
        return subprocess.run(argv, env=env).returncode
    except KeyboardInterrupt:
        return 130
