"""Starting one rank: its environment, a local or ssh process for it, its
output forwarders and the thread that waits for its exit (launch_rank, used
by static jobs (job.py) and elastic workers (elastic/driver.py) alike).

Every rank runs in its own session / process group (start_new_session), so
signalling the group reaches the rank and anything it spawned, and Ctrl-C
in horovodrun's terminal reaches only horovodrun, which then stops the ranks.
"""
import dataclasses
import os
import re
import shlex
import signal
import subprocess
import threading
import time

from horovod_accel.common import compute_threads
from horovod_accel.runner import output

SECRET_ENV = "_HOROVOD_SECRET_KEY"

# Variables that describe the launching machine or shell, never passed to
# remote ranks (upstream excludes a similar set).
_NOT_EXPORTED = {"HOSTNAME", "PWD", "OLDPWD", "SHLVL", "_", "HOME", "USER", "LOGNAME",
                 "SHELL", "MAIL", "DISPLAY", "TERM", "TMPDIR", "XAUTHORITY", SECRET_ENV}
_NOT_EXPORTED_PREFIXES = ("BASH_FUNC_", "SSH_", "XDG_")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class LaunchError(RuntimeError):
    pass


def slot_env(slot, store_addr, store_port, secret):
    """The per-rank variables (the env contract between horovodrun and ranks)."""
    return {
        "HOROVOD_RANK": str(slot.rank),
        "HOROVOD_SIZE": str(slot.size),
        "HOROVOD_LOCAL_RANK": str(slot.local_rank),
        "HOROVOD_LOCAL_SIZE": str(slot.local_size),
        "HOROVOD_CROSS_RANK": str(slot.cross_rank),
        "HOROVOD_CROSS_SIZE": str(slot.cross_size),
        "HOROVOD_HOSTNAME": slot.hostname,
        "HOROVOD_GLOO_RENDEZVOUS_ADDR": store_addr,
        "HOROVOD_GLOO_RENDEZVOUS_PORT": str(store_port),
        "HOROVOD_CONTROLLER": "gloo",
        SECRET_ENV: secret,
    }


def exportable(name):
    """Whether a variable of horovodrun's environment is passed to remote ranks."""
    return (bool(_ENV_NAME.match(name)) and name not in _NOT_EXPORTED
            and not name.startswith(_NOT_EXPORTED_PREFIXES))


def ssh_command(host, command, env, cwd, ssh_port=None, identity_file=None, connect_timeout=30):
    """argv of the ssh client that runs `command` (argv) on `host` in `cwd`.

    `env` is passed on the remote command line, except the job secret, which
    the remote shell reads from its stdin (so it never shows in `ps` output
    there): write the secret and a newline to the ssh process's stdin.
    """
    assigns = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()) if exportable(k))
    remote = (f"cd {shlex.quote(cwd)} >/dev/null 2>&1; read -r {SECRET_ENV}; export {SECRET_ENV}; "
              f"exec env {assigns} {' '.join(shlex.quote(a) for a in command)}")
    argv = ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
            "-o", f"ConnectTimeout={max(1, int(connect_timeout))}"]
    if ssh_port:
        argv += ["-p", str(ssh_port)]
    if identity_file:
        argv += ["-i", identity_file]
    return argv + [host, remote]


def start_local(command, env):
    """Starts `command` (argv) here with exactly `env`; stdout/stderr are pipes,
    stdin is /dev/null. Raises LaunchError if it cannot be started."""
    try:
        return subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as e:
        raise LaunchError(f"cannot start '{command[0]}': {e.strerror}; check the command "
                          f"(and PATH)") from None


def start_remote(host, command, env, ssh_port, identity_file, connect_timeout):
    """Starts `command` on `host` through ssh; output pipes as in start_local."""
    argv = ssh_command(host, command, env, os.getcwd(), ssh_port, identity_file, connect_timeout)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as e:
        raise LaunchError(f"cannot run ssh to reach host '{host}': {e.strerror}; install an ssh "
                          "client or run all ranks on this machine") from None
    try:
        proc.stdin.write(env.get(SECRET_ENV, "").encode() + b"\n")
        proc.stdin.close()
    except OSError:
        pass  # ssh already died; its exit status and stderr tell why
    return proc


@dataclasses.dataclass(kw_only=True)
class LaunchSettings:
    """How horovodrun starts every rank of a job."""
    command: list                # argv run for every rank
    env: dict                    # environment common to all ranks (tunables included)
    secret: str                  # the rendezvous store's job secret
    store_port: int
    output_dir: str = None
    timestamp_output: bool = False
    verbose: bool = False
    ssh_port: int = None
    ssh_identity_file: str = None
    start_timeout: float = 30.0
    # Who starts a rank: None = launch_rank below (a local or ssh process);
    # else a callable with launch_rank's signature that returns an object
    # with RankProcess's interface (horovod.spark: ranks run in Spark tasks).
    launcher: object = None


def launch_rank(settings, slot, store_addr, remote, on_exit, extra_env=None, label=None):
    """Starts the process of `slot` (over ssh when `remote`), with the
    launcher's environment, the slot's HOROVOD_* variables, the compute
    thread counts (local ranks only) and `extra_env`;
    forwards its output with the slot's rank as prefix. on_exit(RankProcess)
    is called from a daemon thread once the process has ended. Returns the
    RankProcess; raises LaunchError if it cannot be started."""
    env = dict(settings.env)
    env.update(slot_env(slot, store_addr, settings.store_port, settings.secret))
    if not remote:  # a remote host's share is its own: hvd.init() works it out there
        env.update(compute_threads.launcher_env(env, slot.local_size))
    env.update(extra_env or {})
    if remote:
        proc = start_remote(slot.hostname, settings.command, env, settings.ssh_port,
                            settings.ssh_identity_file, settings.start_timeout)
    else:
        proc = start_local(settings.command, env)
    if settings.verbose:
        how = "via ssh" if remote else "locally"
        output.console_message(f"started {label or f'rank {slot.rank}'} on {slot.hostname} {how} "
                               f"(pid {proc.pid})")
    out, err = output.forward_rank_output(proc, slot.rank, slot.size, settings.output_dir,
                                          settings.timestamp_output)
    rp = RankProcess(slot, proc, remote, out, err)
    threading.Thread(target=lambda: (proc.wait(), on_exit(rp)), name=f"hvda-wait-{slot.rank}",
                     daemon=True).start()
    return rp


def kill_and_drain(ranks, drain_s):
    """SIGKILLs what is left in every rank's process group (leftover children
    of ranks that ended; the group id stays reserved while a member lives),
    then waits up to drain_s seconds in all for their last output."""
    for rp in ranks:
        rp.signal_group(signal.SIGKILL)
    deadline = time.monotonic() + drain_s
    for rp in ranks:
        for fwd in (rp.out, rp.err):
            fwd.join(max(0.0, deadline - time.monotonic()))


class RankProcess:
    """A started rank: owns its Popen; `out`/`err` are its output forwarders."""

    def __init__(self, slot, proc, remote, out, err):
        self.slot = slot
        self.proc = proc
        self.remote = remote
        self.out = out
        self.err = err
        self.stopped_by_us = False  # set when horovodrun signals it to stop

    @property
    def rank(self):
        return self.slot.rank

    def signal_group(self, sig):
        """Sends `sig` to the rank's process group. Safe after the rank exited:
        a group whose members are all gone is ignored."""
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def describe_exit(self):
        """How the rank ended, e.g. 'exit code 3' or 'signal SIGKILL'."""
        rc = self.proc.returncode
        if rc is None:
            return "still running"
        if rc < 0:
            try:
                return f"signal {signal.Signals(-rc).name}"
            except ValueError:
                return f"signal {-rc}"
        text = f"exit code {rc}"
        if self.remote and rc == 255:
            text += " (ssh could not reach the host or the remote command failed)"
        elif 128 < rc <= 128 + 64:
            try:
                text += f" (a shell reports this for death by {signal.Signals(rc - 128).name})"
            except ValueError:
                pass
        return text
