"""Hosts without hosts: network namespaces on this machine acting as separate
machines, for the multi-host tests (tests/python/test_multihost.py) and
`benchmarks/allreduce.py --hosts`.

Each "host" is
  - a network namespace with its own loopback and one interface, eth0, with
    the address 10.77.0.<i+1>/24, plugged into a bridge that lives in one
    more namespace (the "switch"): hosts reach each other only through the
    addresses created here, never the machine's own network;
  - a UTS namespace with its own host name (hostA, hostB, ...);
  - a mount namespace with its own tmpfs on /dev/shm, so shared memory is
    per host, as on real machines: a rank that wrongly tried shared memory
    with a rank on another host would not find its segment;
  - with resolvable_names=True, an /etc/hosts naming every host (through
    /etc/netns/<namespace>/hosts, which `ip netns exec` mounts over
    /etc/hosts): host names then resolve on every host, as in a cluster.
    Without it they resolve nowhere, as in many containers.
One long-lived agent process (`sleep`) holds the namespaces of each host;
`Host.command(argv)` prefixes argv with the nsenter call that runs it there.

Remote shells: `ssh_dir` holds an executable named `ssh` that stands in for
the ssh client. `ssh [options] HOST COMMAND...` runs COMMAND through `sh -c`
on HOST (named by its address or host name) with a login-like environment
(PATH, HOME, no inherited variables), stdin/stdout/stderr passed through, and
COMMAND's exit status - what horovodrun, Open MPI's rsh launcher and MPICH's
Hydra expect of ssh. Put ssh_dir first on PATH (or name the file in
`--mca plm_rsh_agent` / `-launcher-exec`). No sshd is involved.

Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN), iproute2 and util-linux's
nsenter/unshare; `unavailable_reason()` says why namespaces cannot be made.
Lifetime: NetnsHosts is a context manager; leaving it stops the agents and
deletes every namespace it created (also after a failure part-way through
setup).
"""
import os
import shlex
import shutil
import subprocess
import tempfile
import time

SUBNET = "10.77.0"
HOST_NAMES = [f"host{chr(ord('A') + i)}" for i in range(26)]
_LOGIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


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
    """One namespace host: `name` (its host name), `addr` (its IPv4 address),
    `netns` (the network namespace's name), `agent` (the Popen holding its
    namespaces)."""

    def __init__(self, index, tag):
        self.index = index
        self.name = HOST_NAMES[index]
        self.addr = f"{SUBNET}.{index + 1}"
        self.netns = f"hvda{tag}h{index}"
        self.agent = None

    def command(self, argv, cwd=None):
        """argv that runs `argv` in this host's namespaces, in `cwd` (default:
        the caller's working directory; entering a mount namespace would
        otherwise start it in /)."""
        return ["nsenter", "-t", str(self.agent.pid), "-n", "-m", "-u",
                f"--wd={cwd or os.getcwd()}", "--"] + [str(a) for a in argv]


class NetnsHosts:
    """`NetnsHosts(n)`: n namespace hosts on one bridge (see the module doc)."""

    def __init__(self, n_hosts, resolvable_names=False):
        if not 1 <= n_hosts <= len(HOST_NAMES):
            raise ValueError(f"1 to {len(HOST_NAMES)} hosts, not {n_hosts}")
        self.tag = f"{os.getpid() % 100000}x{int(time.monotonic() * 1000) % 1000}"
        self.hosts = [Host(i, self.tag) for i in range(n_hosts)]
        self.switch = f"hvda{self.tag}sw"
        self.ssh_dir = None
        self.resolvable_names = resolvable_names
        self._netns = []
        self._etc_dirs = []

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
            self._add_netns(h.netns)
            port = f"p{h.index}"
            _run(["ip", "link", "add", "eth0", "netns", h.netns, "type", "veth", "peer", "name",
                  port, "netns", self.switch])
            _run(["ip", "-n", self.switch, "link", "set", port, "master", "br0", "up"])
            _run(["ip", "-n", h.netns, "addr", "add", f"{h.addr}/24", "dev", "eth0"])
            _run(["ip", "-n", h.netns, "link", "set", "eth0", "up"])
            _run(["ip", "-n", h.netns, "link", "set", "lo", "up"])
            if self.resolvable_names:
                self._write_etc_hosts(h)
            # `ip netns exec` gives the command its own mount namespace (with
            # this namespace's /sys); unshare adds the UTS namespace. The
            # agent keeps both alive; `ready` tells us the mounts are done.
            script = (f"hostname {h.name} && mount -t tmpfs -o mode=1777 tmpfs /dev/shm && "
                      f"echo ready && exec sleep 1000000")
            h.agent = subprocess.Popen(["ip", "netns", "exec", h.netns, "unshare", "--uts", "--",
                                        "sh", "-c", script], stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True)
            line = h.agent.stdout.readline().strip()
            if line != "ready":
                raise RuntimeError(f"namespace host {h.name} did not start: "
                                   f"{h.agent.stderr.read().strip()}")
        # The bridge has STP off, so its ports forward at once: no wait.
        self._write_ssh()

    def _write_etc_hosts(self, h):
        etc = os.path.join("/etc/netns", h.netns)
        os.makedirs(etc)
        self._etc_dirs.append(etc)
        with open(os.path.join(etc, "hosts"), "w") as f:
            f.write("127.0.0.1 localhost\n")
            f.writelines(f"{peer.addr} {peer.name}\n" for peer in self.hosts)

    def _write_ssh(self):
        self.ssh_dir = tempfile.mkdtemp(prefix="hvda_netns_ssh_")
        table = "\n".join(f"    {h.addr}|{h.name}) pid={h.agent.pid} ;;" for h in self.hosts)
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
        path = os.path.join(self.ssh_dir, "ssh")
        with open(path, "w") as f:
            f.write(script)
        os.chmod(path, 0o755)

    # ------------------------------------------------------------ use
    @property
    def ssh(self):
        return os.path.join(self.ssh_dir, "ssh")

    def env(self, base=None):
        """A copy of `base` (default os.environ) with ssh_dir first on PATH."""
        env = dict(os.environ if base is None else base)
        env["PATH"] = self.ssh_dir + os.pathsep + env.get("PATH", "")
        return env

    def close(self):
        for h in self.hosts:
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
