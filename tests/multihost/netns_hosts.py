"""Hosts without hosts: network namespaces on this machine acting as separate
machines, for the multi-host tests (tests/python/test_multihost.py) and
`benchmarks/allreduce.py --hosts`.

Each "host" is
  - a network namespace with its own loopback and one interface, eth0, with
    the address 10.77.0.<i+1>/24, plugged into a bridge that lives in one
    more namespace (the "switch"): hosts reach each other only through the
    addresses created here, never the machine's own network;
  - a UTS namespace with its own host name (hostA, hostB, ..., or the
    `names` given);
  - a mount namespace with its own tmpfs on /dev/shm, so shared memory is
    per host, as on real machines: a rank that wrongly tried shared memory
    with a rank on another host would not find its segment;
  - with resolvable_names=True, an /etc/hosts naming every host and its
    `aliases` (through /etc/netns/<namespace>/hosts, which `ip netns exec`
    mounts over /etc/hosts): host names then resolve on every host, as in a
    cluster. Without it they resolve nowhere, as in many containers.
One long-lived agent process (`sleep`) holds the namespaces of each host;
`Host.command(argv)` prefixes argv with the nsenter call that runs it there.

A host can die and come back as a Kubernetes pod does: `stop_host(h)`
SIGKILLs every process in its namespaces and deletes them (its names stop
resolving, ssh to it fails); `start_host(h)` makes it anew under the same
names with a new address, and rewrites every host's /etc/hosts in place (a
bind mount follows the file's inode, so hosts started earlier see the
change).

Remote shells: `ssh_dir` holds an executable named `ssh` that stands in for
the ssh client. `ssh [options] HOST COMMAND...` runs COMMAND through `sh -c`
on HOST (named by its address, host name or an alias) with a login-like
environment (PATH, HOME, no inherited variables), stdin/stdout/stderr passed
through, and COMMAND's exit status - what horovodrun, Open MPI's rsh launcher
and MPICH's Hydra expect of ssh. Put ssh_dir first on PATH (or name the file in
`--mca plm_rsh_agent` / `-launcher-exec`). No sshd is involved.

Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN), iproute2 and util-linux's
nsenter/unshare; `unavailable_reason()` says why namespaces cannot be made.
Lifetime: NetnsHosts is a context manager; leaving it SIGKILLs every process
left in its hosts' namespaces (agents, and whatever a test started there)
and deletes every namespace it created (also after a failure part-way
through setup).
"""
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time

SUBNET = "10.77.0"
HOST_NAMES = [f"host{chr(ord('A') + i)}" for i in range(26)]
_LOGIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_NAME_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$")  # RFC 1123 host names
_KILL_DEADLINE_S = 10.0


def _run(argv):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise RuntimeError(f"{shlex.join(argv)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def unavailable_reason():
    """None if namespaces can be made here, else why not (for pytest.skip)."""
    for tool in ("ip", "nsenter", "unshare"):
        if shutil.which(tool) is None:
            return f"'{tool}' is not installed (iproute2 / util-linux)"
    if os.geteuid() != 0:
        return "creating network namespaces needs root"
    try:  # the whole setup, once: namespaces, veth, bridge, UTS, tmpfs mount
        with NetnsHosts(1):
            pass
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        return f"namespace hosts cannot be made here: {e}"
    return None


class Host:
    """One namespace host: `name` (its host name), `aliases` (more names that
    resolve to it), `addr` (its IPv4 address; a new one after each
    start_host), `netns` (the network namespace's name), `agent` (the Popen
    holding its namespaces; None while the host is stopped)."""

    def __init__(self, index, tag, name, aliases=()):
        self.index = index
        self.name = name
        self.aliases = list(aliases)
        self.addr = f"{SUBNET}.{index + 1}"
        self.netns = f"hvda{tag}h{index}"
        self.agent = None
        self.generation = 0  # times started; names the switch port of each start

    @property
    def running(self):
        return self.agent is not None and self.agent.poll() is None

    def command(self, argv, cwd=None):
        """argv that runs `argv` in this host's namespaces, in `cwd` (default:
        the caller's working directory; entering a mount namespace would
        otherwise start it in /). Raises RuntimeError if the host is stopped."""
        if not self.running:
            raise RuntimeError(f"namespace host {self.name} is not running (stopped or died)")
        return ["nsenter", "-t", str(self.agent.pid), "-n", "-m", "-u",
                f"--wd={cwd or os.getcwd()}", "--"] + [str(a) for a in argv]


class NetnsHosts:
    """`NetnsHosts(n)`: n namespace hosts on one bridge (see the module doc).

    names: the hosts' names (default hostA, hostB, ...); aliases: for each
    host, a list of more names for it (e.g. a pod's DNS name), written to
    every /etc/hosts with resolvable_names and accepted by the stand-in ssh.
    """

    def __init__(self, n_hosts, resolvable_names=False, names=None, aliases=None):
        if not 1 <= n_hosts <= len(HOST_NAMES):
            raise ValueError(f"1 to {len(HOST_NAMES)} hosts, not {n_hosts}")
        names = list(names) if names is not None else HOST_NAMES[:n_hosts]
        aliases = [list(a) for a in aliases] if aliases is not None else [[] for _ in names]
        if len(names) != n_hosts or len(aliases) != n_hosts:
            raise ValueError(f"{n_hosts} hosts need {n_hosts} names and {n_hosts} alias lists, "
                             f"got {len(names)} and {len(aliases)}")
        every = names + [a for al in aliases for a in al]
        bad = [n for n in every if not _NAME_RE.match(n)]
        if bad or len(set(every)) != len(every):
            raise ValueError(f"host names and aliases must be distinct RFC 1123 names: {every}")
        self.tag = f"{os.getpid() % 100000}x{int(time.monotonic() * 1000) % 1000}"
        self.hosts = [Host(i, self.tag, names[i], aliases[i]) for i in range(n_hosts)]
        self.switch = f"hvda{self.tag}sw"
        self.ssh_dir = None
        self.resolvable_names = resolvable_names
        self._netns = []
        self._etc_dirs = []
        self._next_octet = n_hosts + 1  # addresses of restarted hosts follow the first ones

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

    def _add_netns(self, name):
        _run(["ip", "netns", "add", name])
        self._netns.append(name)

    def _setup(self):
        self._add_netns(self.switch)
        _run(["ip", "-n", self.switch, "link", "add", "br0", "type", "bridge"])
        _run(["ip", "-n", self.switch, "link", "set", "br0", "up"])
        for h in self.hosts:
            self._start(h)
        # The bridge has STP off, so its ports forward at once: no wait.
        self._write_names()

    def _start(self, h):
        """Namespaces, interface, address and agent of host h (not running)."""
        if h.netns not in self._netns:
            self._add_netns(h.netns)
        port = f"p{h.index}g{h.generation}"  # a dead namespace's port may linger a moment
        h.generation += 1
        _run(["ip", "link", "add", "eth0", "netns", h.netns, "type", "veth", "peer", "name",
              port, "netns", self.switch])
        _run(["ip", "-n", self.switch, "link", "set", port, "master", "br0", "up"])
        _run(["ip", "-n", h.netns, "addr", "add", f"{h.addr}/24", "dev", "eth0"])
        _run(["ip", "-n", h.netns, "link", "set", "eth0", "up"])
        _run(["ip", "-n", h.netns, "link", "set", "lo", "up"])
        if self.resolvable_names:
            self._write_etc_hosts(h)
        # `ip netns exec` gives the command its own mount namespace (with
        # this namespace's /sys) and mounts /etc/netns/<netns>/hosts over
        # /etc/hosts; unshare adds the UTS namespace. The agent keeps them
        # alive; `ready` tells us the mounts are done.
        script = (f"hostname {h.name} && mount -t tmpfs -o mode=1777 tmpfs /dev/shm && "
                  f"echo ready && exec sleep 1000000")
        h.agent = subprocess.Popen(["ip", "netns", "exec", h.netns, "unshare", "--uts", "--",
                                    "sh", "-c", script], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        line = h.agent.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"namespace host {h.name} did not start: "
                               f"{h.agent.stderr.read().strip()}")

    def _write_etc_hosts(self, h):
        """(Re)writes h's /etc/hosts in place: same inode, so the bind mount
        that `ip netns exec` made of it shows the new content."""
        etc = os.path.join("/etc/netns", h.netns)
        if etc not in self._etc_dirs:
            os.makedirs(etc, exist_ok=True)
            self._etc_dirs.append(etc)
        with open(os.path.join(etc, "hosts"), "w") as f:
            f.write("127.0.0.1 localhost\n")
            f.writelines(f"{peer.addr} {' '.join([peer.name] + peer.aliases)}\n"
                         for peer in self.hosts if peer.running)

    def _write_names(self):
        """Every running host's /etc/hosts (with resolvable_names) and the
        stand-in ssh's table, after hosts started or stopped."""
        if self.resolvable_names:
            for h in self.hosts:
                if h.running:
                    self._write_etc_hosts(h)
        self._write_ssh()

    def _write_ssh(self):
        if self.ssh_dir is None:
            self.ssh_dir = tempfile.mkdtemp(prefix="hvda_netns_ssh_")
        table = "\n".join(f"    {'|'.join([h.addr, h.name] + h.aliases)}) pid={h.agent.pid} ;;"
                          for h in self.hosts if h.running)
        script = f"""#!/bin/bash
# Test stand-in for ssh (tests/multihost/netns_hosts.py): runs the command on a
# namespace host through nsenter. Options ssh would take are skipped.
while [ $# -gt 0 ]; do
  case "$1" in
    -[bcDEeFIiJLlmOoPpQRSWw]) shift 2 ;;
    -[bcDEeFIiJLlmOoPpQRSWw]*|-*) shift ;;
    *) break ;;
  esac
done
if [ $# -lt 1 ]; then echo "ssh (netns stand-in): no host given" >&2; exit 255; fi
host="$1"; shift
case "$host" in
{table}
    *) echo "ssh: Could not resolve hostname $host: not one of this test's namespace hosts" >&2
       exit 255 ;;
esac
exec nsenter -t "$pid" -n -m -u -- env -i PATH={_LOGIN_PATH} HOME="${{HOME:-/root}}" \\
  USER="$(id -un)" LOGNAME="$(id -un)" /bin/sh -c "cd \\"\\$HOME\\" 2>/dev/null; $*"
"""
        # Replaced, never rewritten in place: bash reads a script while it
        # runs, and an ssh started a moment ago may still be reading this one.
        path = os.path.join(self.ssh_dir, "ssh")
        with open(path + ".new", "w") as f:
            f.write(script)
        os.chmod(path + ".new", 0o755)
        os.replace(path + ".new", path)

    # ------------------------------------------------------------ use
    @property
    def ssh(self):
        return os.path.join(self.ssh_dir, "ssh")

    def env(self, base=None):
        """A copy of `base` (default os.environ) with ssh_dir first on PATH."""
        env = dict(os.environ if base is None else base)
        env["PATH"] = self.ssh_dir + os.pathsep + env.get("PATH", "")
        return env

    def stop_host(self, h):
        """Ends host h as a deleted pod ends: SIGKILLs every process in its
        network namespace (the agent and all that was started there through
        command() or ssh) and deletes the namespace. Its names then resolve
        nowhere and ssh to it fails. Blocks until they are gone (at most ~10
        s; RuntimeError past that)."""
        self._kill_everything_in(h)
        subprocess.run(["ip", "netns", "del", h.netns], capture_output=True, timeout=30)
        self._netns.remove(h.netns)
        self._write_names()

    def start_host(self, h):
        """Makes a stopped host h anew, as a controller recreates a pod under
        its name: same names, a new address, fresh namespaces (empty
        /dev/shm); every host's /etc/hosts and the ssh table then name it."""
        if h.running:
            raise RuntimeError(f"namespace host {h.name} is running; stop_host() it first")
        if self._next_octet > 254:
            raise RuntimeError("no address left on the namespace hosts' /24")
        h.addr = f"{SUBNET}.{self._next_octet}"
        self._next_octet += 1
        try:
            self._start(h)
        finally:
            self._write_names()

    def _kill_everything_in(self, h):
        deadline = time.monotonic() + _KILL_DEADLINE_S
        while True:
            r = subprocess.run(["ip", "netns", "pids", h.netns], capture_output=True, text=True,
                               timeout=30)
            pids = [int(p) for p in r.stdout.split()]
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"processes {pids} in namespace host {h.name} survived SIGKILL")
            time.sleep(0.02)  # a killed process leaves the namespace when the kernel reaps it
        if h.agent is not None:
            h.agent.kill()
            h.agent.wait()
            h.agent = None

    def close(self):
        for h in self.hosts:
            if h.netns in self._netns:
                try:
                    self._kill_everything_in(h)
                except (RuntimeError, OSError, subprocess.SubprocessError):
                    pass  # best effort: the namespaces go below regardless
            if h.agent is not None and h.agent.poll() is None:
                h.agent.kill()
                h.agent.wait()
        for name in reversed(self._netns):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)
        self._netns.clear()
        for etc in self._etc_dirs:
            shutil.rmtree(etc, ignore_errors=True)
        self._etc_dirs.clear()
        if self.ssh_dir:
            shutil.rmtree(self.ssh_dir, ignore_errors=True)
            self.ssh_dir = None
