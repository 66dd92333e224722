"""Host lists (-H / --hostfile) and the assignment of ranks to host slots.

Pure functions, no I/O except parse_hostfile reading its file.
"""
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Host:
    name: str
    slots: int


@dataclass(frozen=True)
class SlotInfo:
    """Where one rank runs and its topology (exported as HOROVOD_* to it)."""
    hostname: str
    rank: int
    size: int
    local_rank: int
    local_size: int
    cross_rank: int
    cross_size: int


HOST_RE = re.compile(r"^[\w.\-]+$")


def _parse_one(item, where):
    item = item.strip()
    name, sep, slots = item.rpartition(":")
    if not sep:
        name, slots = item, "1"
    if not name or not HOST_RE.match(name) or not slots.isdigit():
        raise ValueError(f"invalid host '{item}' in {where}: expected <hostname>:<slots>, "
                         f"e.g. -H worker-0:2,worker-1:2")
    return Host(name, int(slots))


def _check_unique(hosts, where):
    seen = set()
    for h in hosts:
        if h.name in seen:
            raise ValueError(f"host '{h.name}' is listed more than once in {where}; list each "
                             f"host once with its total number of slots")
        seen.add(h.name)
    return hosts


def parse_hosts(spec):
    """Parses 'h1:2,h2:4' (a missing ':slots' means 1 slot) into [Host]."""
    items = [s for s in spec.split(",") if s.strip()]
    if not items:
        raise ValueError("the host list (-H/--hosts) is empty; use e.g. -H localhost:2")
    return _check_unique([_parse_one(s, "-H/--hosts") for s in items], "-H/--hosts")


def parse_hostfile(path):
    """Reads a hostfile: one '<hostname> slots=<N>' per line ('slots=' optional,
    default 1); blank lines and '#' comments are skipped."""
    try:
        with open(path) as f:
            lines = f.readlines()
    except OSError as e:
        raise ValueError(f"cannot read the hostfile {path}: {e.strerror}") from None
    hosts = []
    for lineno, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        slots = "1"
        for p in parts[1:]:
            key, _, val = p.partition("=")
            if key == "slots":  # other keys (e.g. OpenMPI's max_slots) are ignored
                slots = val
        where = f"hostfile {path} line {lineno}"
        if not HOST_RE.match(parts[0]) or not slots.isdigit():
            raise ValueError(f"invalid {where}: '{raw.rstrip()}'; expected '<hostname> slots=<N>'")
        hosts.append(Host(parts[0], int(slots)))
    if not hosts:
        raise ValueError(f"the hostfile {path} lists no hosts")
    return _check_unique(hosts, f"hostfile {path}")


def format_hosts(hosts):
    return ",".join(f"{h.name}:{h.slots}" for h in hosts)


def assign_slots(hosts, num_proc):
    """Assigns ranks 0..num_proc-1 to hosts in order, filling each host's slots.

    local_rank counts ranks on a host; cross_rank of a rank is the index of its
    host among the hosts that have a rank with the same local_rank, and
    cross_size the number of such hosts (upstream's semantics).
    Raises ValueError if num_proc < 1 or exceeds the total slots.
    """
    if num_proc < 1:
        raise ValueError(f"-np must be at least 1 (got {num_proc})")
    total = sum(h.slots for h in hosts)
    if num_proc > total:
        raise ValueError(f"requested {num_proc} processes (-np) but the hosts provide only "
                         f"{total} slots ({format_hosts(hosts)}); add hosts or slots, or lower -np")
    placed = []  # (host, [ranks])
    rank = 0
    for h in hosts:
        n = min(h.slots, num_proc - rank)
        if n > 0:
            placed.append((h.name, list(range(rank, rank + n))))
            rank += n
    hosts_with_local = {}  # local_rank -> [hostname in order]
    for name, ranks in placed:
        for lr in range(len(ranks)):
            hosts_with_local.setdefault(lr, []).append(name)
    out = []
    for name, ranks in placed:
        for lr, r in enumerate(ranks):
            peers = hosts_with_local[lr]
            out.append(SlotInfo(hostname=name, rank=r, size=num_proc, local_rank=lr,
                                local_size=len(ranks), cross_rank=peers.index(name),
                                cross_size=len(peers)))
    return out
