"""Where the hosts of an elastic job come from: a user's discovery script, or
the fixed -H/--hostfile list (fault tolerance on fixed hosts).

A discovery script prints one `host[:slots]` per line (blank lines and
'#' comments ignored); a line without slots gets --slots-per-host, and
without that flag it is an error that says so (upstream silently gave such
hosts no slots). The script runs through /bin/sh (so `script.sh arg` works),
with a timeout; each call blocks its caller for at most that long.
"""
import subprocess

from horovod_accel.runner import hosts as hosts_mod

SCRIPT_TIMEOUT_S = 30.0


class DiscoveryError(RuntimeError):
    """The discovery script failed or printed something we cannot use."""


class FixedHosts:
    def __init__(self, host_list):
        self._hosts = list(host_list)

    def find_available_hosts(self):
        return list(self._hosts)

    def describe(self):
        return f"the fixed hosts {hosts_mod.format_hosts(self._hosts)}"


class HostDiscoveryScript:
    def __init__(self, script, slots_per_host=None, timeout=SCRIPT_TIMEOUT_S):
        self._script = script
        self._slots = slots_per_host
        self._timeout = timeout

    def describe(self):
        return f"the host discovery script {self._script}"

    def find_available_hosts(self):
        """-> [Host] in the script's order. Raises DiscoveryError."""
        try:
            r = subprocess.run(["/bin/sh", "-c", self._script], stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=self._timeout)
        except subprocess.TimeoutExpired:
            raise DiscoveryError(f"the host discovery script {self._script} did not finish within "
                                 f"{self._timeout:.0f} s") from None
        if r.returncode != 0:
            err = r.stderr.strip().splitlines()[-3:]
            raise DiscoveryError(f"the host discovery script {self._script} exited with code "
                                 f"{r.returncode}" + (": " + " | ".join(err) if err else ""))
        return self.parse(r.stdout)

    def parse(self, text):
        out, seen = [], set()
        for lineno, raw in enumerate(text.splitlines(), 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            name, sep, slots = line.rpartition(":")
            if not sep:
                name, slots = line, None
            if not name or not hosts_mod.HOST_RE.match(name) or \
                    (slots is not None and not slots.isdigit()):
                raise DiscoveryError(f"the host discovery script {self._script} printed "
                                     f"{raw.strip()!r} on line {lineno}; expected "
                                     "'<hostname>' or '<hostname>:<slots>'")
            if slots is None:
                if self._slots is None:
                    raise DiscoveryError(
                        f"the host discovery script {self._script} printed host {name!r} "
                        "without a slot count; print '<hostname>:<slots>' or pass "
                        "--slots-per-host")
                slots = self._slots
            if name in seen:
                continue  # listed twice: the first line counts
            seen.add(name)
            out.append(hosts_mod.Host(name, int(slots)))
        return out
