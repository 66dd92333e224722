"""The hosts an elastic job may use: discovered hosts in a stable order, minus
the blacklist.

Order: a host keeps the place it got when first seen; a host that disappears
loses its place and, when it comes back, is appended as a new host. So the
oldest hosts (whose workers hold the current state) get the lowest ranks.

Blacklist: a host where a worker failed is not used again, for ever by
default, or with --blacklist-cooldown-range MIN MAX for MIN * 2**(n-1) plus a
random fraction of MIN seconds after its n-th failure, at most MAX (upstream's
rule). A blacklisted host that comes back after its cooldown is a new host:
it gets new workers, never its old processes (horovod#3852: a Kubernetes pod
reused under the same name).

Not thread-safe: one caller (the driver's loop) owns it; `now` is injectable
for tests.
"""
import random
import time


class HostManager:
    def __init__(self, cooldown_range=None, now=time.monotonic, rng=None):
        if cooldown_range is not None:
            lo, hi = cooldown_range
            if not 1 <= lo <= hi:
                raise ValueError(f"--blacklist-cooldown-range {lo} {hi}: expected 1 <= MIN <= MAX")
        self._cooldown = cooldown_range
        self._now = now
        self._rng = rng or random.Random()
        self._discovered = []     # [Host] from the last discovery, in its order
        self._order = []          # host names in first-seen order
        self._failures = {}       # name -> times blacklisted
        self._blacklisted = {}    # name -> monotonic time it may return (None: never)

    def update(self, discovered):
        """Takes a discovery result ([Host])."""
        names = [h.name for h in discovered]
        self._order = [n for n in self._order if n in names]
        for n in names:
            if n not in self._order:
                self._order.append(n)
        self._discovered = list(discovered)

    def _expire_cooldowns(self):
        now = self._now()
        for name, until in list(self._blacklisted.items()):
            if until is not None and now >= until:
                del self._blacklisted[name]
                # Back after its cooldown: a new host, placed last.
                if name in self._order:
                    self._order.remove(name)
                    self._order.append(name)

    def available(self):
        """[Host] usable now, in host order."""
        self._expire_cooldowns()
        by_name = {h.name: h for h in self._discovered}
        return [by_name[n] for n in self._order if n in by_name and n not in self._blacklisted]

    def blacklist(self, name):
        """Stops using host `name` (a worker failed there). Returns the cooldown
        in seconds, or None when the host is blacklisted for the rest of the job.
        A host already in its cooldown keeps it: the other workers of one lost
        host (K slots fail together) count as one failure, not K, as upstream."""
        self._expire_cooldowns()
        if name in self._blacklisted:
            until = self._blacklisted[name]
            return None if until is None else max(0.0, until - self._now())
        n = self._failures.get(name, 0) + 1
        self._failures[name] = n
        if self._cooldown is None:
            self._blacklisted[name] = None
            return None
        lo, hi = self._cooldown
        delay = min(hi, lo * 2 ** (n - 1) + self._rng.random() * lo)
        self._blacklisted[name] = self._now() + delay
        return delay

    def is_blacklisted(self, name):
        self._expire_cooldowns()
        return name in self._blacklisted

    def all_blacklisted(self):
        """True if every discovered host is blacklisted for good (no cooldown
        will bring one back)."""
        self._expire_cooldowns()
        return bool(self._discovered) and all(
            h.name in self._blacklisted and self._blacklisted[h.name] is None
            for h in self._discovered)

    def blacklisted_names(self):
        self._expire_cooldowns()
        return sorted(self._blacklisted)
