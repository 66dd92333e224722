"""Which worker runs which rank in the next elastic round. Pure functions.

Rules (so that rank 0 always holds the current state, and survivors keep
their places):
- survivors (live workers of the previous round, on hosts still available)
  are placed first, each host at most its slots; the hosts that have
  survivors come first, in host order, then the others;
- new workers fill the free slots in that same host order until the round
  has max_np workers (None: no limit);
- ranks follow the placement: host by host, survivors (in their previous
  rank order) before new workers on each host; local and cross ranks as in
  a static job (hosts.assign_slots).
"""
from dataclasses import dataclass, field


@dataclass
class RoundPlan:
    # [(hostname, worker_id or None for a new worker)] in rank order
    placement: list
    # survivors not placed (their host is gone or has fewer slots now)
    removed: list = field(default_factory=list)

    @property
    def size(self):
        return len(self.placement)

    def survivors(self):
        return [w for _, w in self.placement if w is not None]

    def new_count(self):
        return sum(1 for _, w in self.placement if w is None)

    def topology(self):
        """[dict(rank, size, local_rank, local_size, cross_rank, cross_size)]
        in rank order, computed like a static job's."""
        per_host = {}
        for host, _ in self.placement:
            per_host[host] = per_host.get(host, 0) + 1
        hosts_with_local = {}
        seen = {}
        for host, _ in self.placement:
            lr = seen.get(host, 0)
            seen[host] = lr + 1
            hosts_with_local.setdefault(lr, []).append(host)
        out, seen = [], {}
        for rank, (host, _) in enumerate(self.placement):
            lr = seen.get(host, 0)
            seen[host] = lr + 1
            peers = hosts_with_local[lr]
            out.append(dict(rank=rank, size=self.size, local_rank=lr, local_size=per_host[host],
                            cross_rank=peers.index(host), cross_size=len(peers)))
        return out


def plan_round(hosts, survivors, max_np=None):
    """hosts: available [hosts.Host] in host order; survivors: [(worker_id,
    hostname)] in previous-rank order. Returns a RoundPlan."""
    slots = {h.name: h.slots for h in hosts}
    placed = {h.name: [] for h in hosts}
    removed = []
    for wid, host in survivors:
        if host in placed and len(placed[host]) < slots[host] and \
                (max_np is None or sum(map(len, placed.values())) < max_np):
            placed[host].append(wid)
        else:
            removed.append(wid)
    order = [h.name for h in hosts if placed[h.name]] + [h.name for h in hosts if not placed[h.name]]
    total = sum(map(len, placed.values()))
    new = {name: 0 for name in order}
    for name in order:
        free = slots[name] - len(placed[name])
        if max_np is not None:
            free = min(free, max_np - total)
        if free > 0:
            new[name] = free
            total += free
    placement = []
    for name in order:
        placement += [(name, w) for w in placed[name]] + [(name, None)] * new[name]
    return RoundPlan(placement=placement, removed=removed)


def same_plan(a, b):
    """Whether two plans run the same workers at the same ranks (no reset needed)."""
    return a is not None and b is not None and a.placement == b.placement
