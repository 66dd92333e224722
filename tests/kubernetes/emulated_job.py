"""An MPIJob run on this machine the way the MPI Operator runs it
(mpi_operator.py), with network namespaces as its pods
(tests/multihost/netns_hosts.py). The launcher's command line is the
rendered manifest's, unchanged; what stands in for the cluster:

  pods      one namespace host per pod, <job>-launcher and <job>-worker-<i>,
            with the pod's host name; an /etc/hosts per pod resolves every
            pod's DNS name <pod>.<job>.<namespace>.svc (the cluster DNS).
  /etc/mpi  the operator's ConfigMap: a folder with hostfile (0444) and
            discover_hosts.sh (0555), bind-mounted read-only at /etc/mpi in
            the launcher's mount namespace. /etc/mpi is created on this
            machine as the mount point if it is missing, and left there.
            discover_hosts.sh is replaced whole when workers come and go, as
            the kubelet swaps a ConfigMap's files.
  ssh       netns_hosts' stand-in ssh, first on the launcher's PATH, enters
            the named pod (where a real launcher's ssh reaches the worker's
            sshd): the rsh agent of mpirun and horovodrun alike.
  image     the pods share this machine's files. `workspace` plays the
            image's /workspace (the MPIJob's workingDir): run.sh is
            docker/run.sh itself, examples/ the checkout's, and run.env
            gives ranks this Python and the checkout (PYTHONPATH) and
            records each rank's pod in ranks.log. bin/ has horovodrun (this
            checkout's launcher) and mpirun (Open MPI's, as in the images).
  user      everything runs as root here (mpiuser in the images), so the
            launcher env also has Open MPI's OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM).

The launcher's env is, in this order: a login-like base, the container's
env from the manifest, the operator's variables, the emulation's (PATH,
PYTHONPATH, the two above), then `extra_env`.
Lifetime: a context manager; leaving it kills the launcher and every
process in the pods and removes the namespaces and temporary folders, also
after a failure part-way through setup.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import manifests
import mpi_operator

sys.path.insert(0, str(manifests.REPO / "tests" / "multihost"))
import netns_hosts  # noqa: E402

_LOGIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class LauncherRun:
    """The launcher's process and its output (stdout and stderr merged), read
    line by line as it comes. Every wait has a deadline: past it the
    launcher is killed and AssertionError carries the output's tail."""

    def __init__(self, proc):
        self.proc = proc
        self._lines = []
        self._cond = threading.Condition()
        self._done = False
        threading.Thread(target=self._read, daemon=True, name="launcher-output").start()

    def _read(self):
        for line in self.proc.stdout:
            with self._cond:
                self._lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._done = True
            self._cond.notify_all()

    @property
    def lines(self):
        with self._cond:
            return list(self._lines)

    @property
    def output(self):
        return "\n".join(self.lines)

    def tail(self, n=80):
        return "\n".join(self.lines[-n:])

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()

    def wait_for(self, pattern, timeout, start=0):
        """Blocks until a line at index >= start matches `pattern` (a regex);
        returns (index, match). AssertionError if the launcher ends first or
        `timeout` seconds pass."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._cond:
            i = start
            while True:
                for i in range(i, len(self._lines)):
                    m = rx.search(self._lines[i])
                    if m:
                        return i, m
                i = len(self._lines)
                if self._done:
                    raise AssertionError(f"the launcher ended (rc={self.proc.wait()}) before a "
                                         f"line matched {pattern!r}:\n{self._tail_locked()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
        self.kill()
        raise AssertionError(f"no line matched {pattern!r} within {timeout} s:\n{self.tail()}")

    def _tail_locked(self, n=80):
        return "\n".join(self._lines[-n:])

    def wait(self, timeout):
        """The launcher's exit code, once it and its output have ended."""
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"the launcher did not end within {timeout} s:\n"
                                 f"{self.tail()}") from None
        with self._cond:
            self._cond.wait_for(lambda: self._done, timeout=10)
        return rc


class EmulatedMPIJob:
    """EmulatedMPIJob(job): the rendered MPIJob `job` (a dict), ready to
    start() once entered (see the module doc)."""

    def __init__(self, job, namespace="default", extra_env=None):
        self.job = job
        self.namespace = namespace
        self.extra_env = {k: str(v) for k, v in (extra_env or {}).items()}
        self.launcher = mpi_operator.launcher_name(job)
        self.workers = mpi_operator.worker_names(job)
        self.running_workers = set(self.workers)
        self.hosts = None
        self.run = None
        self._tmp = None

    # ------------------------------------------------------------ setup
    def __enter__(self):
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def _setup(self):
        self._tmp = Path(tempfile.mkdtemp(prefix="hvda_mpijob_"))
        pods = [self.launcher] + self.workers
        aliases = [[mpi_operator.dns_name(self.job, p, self.namespace)] for p in pods]
        self.hosts = netns_hosts.NetnsHosts(len(pods), resolvable_names=True, names=pods,
                                            aliases=aliases).__enter__()
        self._write_config_map()
        self._mount_config_map()
        self._write_workspace()

    @property
    def config_dir(self):
        return self._tmp / "config-map"

    @property
    def workspace(self):
        return self._tmp / "workspace"

    def _write_config_map(self):
        self.config_dir.mkdir()
        self._write_file(mpi_operator.HOSTFILE,
                         mpi_operator.hostfile(self.job, self.namespace), 0o444)
        self._write_discover_hosts()

    def _write_discover_hosts(self):
        text = mpi_operator.discover_hosts(self.job, self.namespace, self.running_workers)
        self._write_file(mpi_operator.DISCOVER_HOSTS, text, 0o555)

    def _write_file(self, name, text, mode):
        """Replaces config-map/<name> whole (never a half-written file)."""
        tmp = self.config_dir / f".{name}.new"
        tmp.write_text(text)
        tmp.chmod(mode)
        os.replace(tmp, self.config_dir / name)

    def _mount_config_map(self):
        os.makedirs(mpi_operator.CONFIG_MOUNT, exist_ok=True)
        pid = str(self.pod(self.launcher).agent.pid)
        for argv in (["mount", "--bind", str(self.config_dir), mpi_operator.CONFIG_MOUNT],
                     ["mount", "-o", "remount,bind,ro", mpi_operator.CONFIG_MOUNT]):
            r = subprocess.run(["nsenter", "-t", pid, "-m", "--"] + argv, capture_output=True,
                               text=True, timeout=30)
            if r.returncode != 0:
                raise RuntimeError(f"cannot mount the ConfigMap in the launcher pod: "
                                   f"{' '.join(argv)}: {r.stderr.strip()}")

    def _write_workspace(self):
        ws, bin_dir = self.workspace, self.workspace / "bin"
        bin_dir.mkdir(parents=True)
        (ws / "run.sh").symlink_to(manifests.REPO / "docker" / "run.sh")
        (ws / "examples").symlink_to(manifests.REPO / "examples")
        (ws / "run.env").write_text(
            "# The emulated image's run.env (tests/kubernetes/emulated_job.py).\n"
            f'PATH="{bin_dir}:{Path(sys.executable).parent}:$PATH"\n'
            f'PYTHONPATH="{manifests.REPO}"\n'
            "export PATH PYTHONPATH\n"
            f'echo "$(hostname)" >> "{ws / "ranks.log"}"\n')
        shim = bin_dir / "horovodrun"
        shim.write_text(f"#!/bin/sh\nexec {sys.executable} -m horovod_accel.runner.launch \"$@\"\n")
        shim.chmod(0o755)
        mpirun = shutil.which("mpirun.openmpi")
        if mpirun is None:
            raise RuntimeError("Open MPI's mpirun.openmpi is not installed (scripts/setup.sh "
                               "installs openmpi-bin); the images run Open MPI")
        (bin_dir / "mpirun").symlink_to(mpirun)

    # ------------------------------------------------------------ use
    def pod(self, name):
        return next(h for h in self.hosts.hosts if h.name == name)

    def launcher_env(self):
        container = manifests.container(self.job, "Launcher")
        env = {"HOME": "/root", "USER": "root", "LOGNAME": "root", "LANG": "C.UTF-8"}
        env.update({k: v or "" for k, v in manifests.env_of(container).items()})
        env.update(mpi_operator.launcher_env(self.job))
        env.update({
            "PATH": os.pathsep.join([self.hosts.ssh_dir, str(self.workspace / "bin"),
                                     str(Path(sys.executable).parent), _LOGIN_PATH]),
            "PYTHONPATH": str(manifests.REPO),
            "OMPI_ALLOW_RUN_AS_ROOT": "1",
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        })
        env.update(self.extra_env)
        return env

    def start(self):
        """Starts the launcher pod's command (the manifest's, unchanged) in
        the workspace; returns its LauncherRun."""
        argv = manifests.launcher_argv(self.job)
        proc = subprocess.Popen(self.pod(self.launcher).command(argv, cwd=str(self.workspace)),
                                env=self.launcher_env(), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        self.run = LauncherRun(proc)
        return self.run

    def delete_worker(self, name):
        """The worker pod dies (every process in it SIGKILLed) and leaves
        discover_hosts.sh, which lists Running pods only."""
        self.hosts.stop_host(self.pod(name))
        self.running_workers.discard(name)
        self._write_discover_hosts()

    def recreate_worker(self, name):
        """The operator creates the worker pod again under its name (a new
        address); once Running it is back in discover_hosts.sh."""
        self.hosts.start_host(self.pod(name))
        self.running_workers.add(name)
        self._write_discover_hosts()

    def rank_pods(self):
        """Host names of the pods the ranks started on, one per rank start."""
        log = self.workspace / "ranks.log"
        return log.read_text().split() if log.exists() else []

    def close(self):
        if self.run is not None:
            self.run.kill()
        if self.hosts is not None:
            self.hosts.close()  # also ends the mount namespace holding /etc/mpi
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
