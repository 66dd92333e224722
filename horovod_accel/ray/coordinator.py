"""Coordinator: turns where Ray placed the workers into each rank's identity,
and serves the job's rendezvous store (upstream's class and methods; Ray
Train's Horovod backend drives it through register / finalize_registration
/ establish_rendezvous).

A "host" here is a Ray node (its node id): local ranks count the ranks of
one node, cross ranks index the nodes that have a rank with the same local
rank, as horovodrun computes them for hosts (runner/hosts.py).

Lifetime: the Coordinator owns the RendezvousStoreServer that
establish_rendezvous() starts, until close(); the store lives in this (the
driver's) process, and ranks reach it over TCP with the per-job secret.
Not thread-safe: one caller (the executor's start()) drives it.
"""
import secrets

import ray

from horovod_accel.rendezvous.server import RendezvousStoreServer
from horovod_accel.runner import hosts as hosts_mod
from horovod_accel.runner import rank_process

LOOPBACK = "127.0.0.1"


def topology(node_of_rank):
    """node_of_rank: the node (any hashable name) of ranks 0..n-1. Returns
    [hosts.SlotInfo] in rank order; nodes are ordered by their lowest rank,
    and each node's ranks get local ranks in rank order."""
    ranks_of = {}
    for rank, node in enumerate(node_of_rank):
        ranks_of.setdefault(node, []).append(rank)
    nodes_with_local = {}  # local rank -> [node] in node order
    for node, ranks in ranks_of.items():
        for lr in range(len(ranks)):
            nodes_with_local.setdefault(lr, []).append(node)
    out = [None] * len(node_of_rank)
    for node, ranks in ranks_of.items():
        for lr, rank in enumerate(ranks):
            peers = nodes_with_local[lr]
            out[rank] = hosts_mod.SlotInfo(
                hostname=str(node), rank=rank, size=len(node_of_rank), local_rank=lr,
                local_size=len(ranks), cross_rank=peers.index(node), cross_size=len(peers))
    return out


class Coordinator:
    """Registers every rank's node, then computes the ranks' topology and
    starts the store.

        coord = Coordinator(settings)
        for rank, (host, node_id) in enumerate(placements):
            coord.register(host, node_id, rank)
        per_rank = coord.finalize_registration()   # {rank: LOCAL/CROSS vars}
        common = coord.establish_rendezvous()      # store address, port, secret
        ...
        coord.close()
    """

    def __init__(self, settings):
        self.settings = settings
        self.node_id_by_rank = {}   # node id -> [world rank] in registration order
        self._hostnames = set()
        self._node_ips = {}         # node id -> its address, where known
        self._slots = None
        self.rendezvous = None      # the RendezvousStoreServer, once established
        self.global_rendezv_port = None
        self.nics = None
        self._store_addr = None
        self._secret = None

    @property
    def world_size(self):
        return sum(len(r) for r in self.node_id_by_rank.values())

    @property
    def hostnames(self):
        return self._hostnames

    @property
    def node_id_string(self):
        return ",".join(f"{node}:{len(ranks)}" for node, ranks in self.node_id_by_rank.items())

    def register(self, hostname, node_id, world_rank, node_ip=None):
        """Records that rank `world_rank` runs on Ray node `node_id` (whose
        machine is `hostname`; its address `node_ip` if known, which lets
        the store stay on loopback when every rank is on this machine)."""
        self._hostnames.add(hostname)
        self.node_id_by_rank.setdefault(node_id, []).append(int(world_rank))
        if node_ip is not None:
            self._node_ips[node_id] = node_ip

    def _compute_slots(self):
        size = self.world_size
        node_of_rank = [None] * size
        for node, ranks in self.node_id_by_rank.items():
            for r in ranks:
                if not 0 <= r < size or node_of_rank[r] is not None:
                    raise ValueError(f"Coordinator: the registered ranks must be 0..{size - 1}, "
                                     f"each once; got {sorted(self._all_ranks())}")
                node_of_rank[r] = node
        self._slots = topology(node_of_rank)
        return self._slots

    def _all_ranks(self):
        return [r for ranks in self.node_id_by_rank.values() for r in ranks]

    def finalize_registration(self):
        """{rank: {HOROVOD_CROSS_RANK, HOROVOD_CROSS_SIZE, HOROVOD_LOCAL_RANK,
        HOROVOD_LOCAL_SIZE}} (ints) for every registered rank."""
        return {s.rank: {"HOROVOD_CROSS_RANK": s.cross_rank, "HOROVOD_CROSS_SIZE": s.cross_size,
                         "HOROVOD_LOCAL_RANK": s.local_rank, "HOROVOD_LOCAL_SIZE": s.local_size}
                for s in self._compute_slots()}

    def establish_rendezvous(self):
        """Starts the store (once) and returns the variables every rank needs
        to reach it: HOROVOD_GLOO_RENDEZVOUS_ADDR/PORT, HOROVOD_CONTROLLER,
        HOROVOD_START_TIMEOUT and the job secret _HOROVOD_SECRET_KEY. The
        result holds the secret: give it to the ranks' environment only
        (never a command line or a log). Does not block."""
        if self.rendezvous is None:
            here = ray.util.get_node_ip_address()
            nodes = list(self.node_id_by_rank)
            all_here = bool(nodes) and all(self._node_ips.get(n) == here for n in nodes)
            # Ranks all on this machine reach the store on loopback; else every
            # interface listens and ranks use the address Ray knows this node by.
            bind, self._store_addr = (LOOPBACK, LOOPBACK) if all_here else ("0.0.0.0", here)
            self._secret = secrets.token_hex(32)
            server = RendezvousStoreServer(self._secret, host=bind,
                                           verbose=(self.settings.verbose or 0) >= 2)
            self.global_rendezv_port = server.start()
            self.rendezvous = server
        return {
            "HOROVOD_GLOO_RENDEZVOUS_ADDR": self._store_addr,
            "HOROVOD_GLOO_RENDEZVOUS_PORT": str(self.global_rendezv_port),
            "HOROVOD_CONTROLLER": "gloo",
            "HOROVOD_START_TIMEOUT": str(self.settings.timeout_s),
            rank_process.SECRET_ENV: self._secret,
        }

    def rank_env(self, rank):
        """Everything rank `rank` needs to join the job (horovodrun's per-rank
        contract, rank_process.slot_env, plus HOROVOD_START_TIMEOUT). Call
        after finalize_registration() and establish_rendezvous()."""
        if self._slots is None or self.rendezvous is None:
            raise RuntimeError("Coordinator.rank_env() needs finalize_registration() and "
                               "establish_rendezvous() first")
        env = rank_process.slot_env(self._slots[rank], self._store_addr,
                                    self.global_rendezv_port, self._secret)
        env["HOROVOD_START_TIMEOUT"] = str(self.settings.timeout_s)
        return env

    def slot(self, rank):
        """The hosts.SlotInfo of a rank (after finalize_registration())."""
        return self._slots[rank]

    def close(self):
        """Stops the store; ranks still connected lose it. Idempotent."""
        if self.rendezvous is not None:
            self.rendezvous.stop()
            self.rendezvous = None
