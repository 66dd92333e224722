"""Elastic mode's hosts: the alive Ray nodes and how many workers each fits,
in the shape horovodrun's elastic driver reads (runner/elastic/discovery.py:
find_available_hosts() -> [hosts.Host], describe()).

A host is a Ray node, named by its node id (so two Ray nodes on one machine
are two hosts, and a node that leaves and rejoins is a new host). Slots come
from a node's total resources: CPU // cpus_per_worker, and with GPUs also
GPU // gpus_per_worker. Called from the driver's discovery thread (blocks
for one GCS query).
"""
import ray

from horovod_accel.runner.elastic.discovery import DiscoveryError
from horovod_accel.runner.hosts import Host


class RayHostDiscovery:
    def __init__(self, use_gpu=False, cpus_per_worker=1, gpus_per_worker=1):
        self.use_gpu = use_gpu
        self.cpus_per_worker = cpus_per_worker
        self.gpus_per_worker = gpus_per_worker or 1
        self.node_ips = {}  # node id -> address, of every node seen alive

    def describe(self):
        per = f"{self.cpus_per_worker} CPU" + (f" + {self.gpus_per_worker} GPU"
                                               if self.use_gpu else "")
        return f"the Ray cluster's alive nodes ({per} per worker)"

    def _slots(self, resources):
        slots = int(resources.get("CPU", 0) // self.cpus_per_worker)
        if self.use_gpu:
            slots = min(slots, int(resources.get("GPU", 0) // self.gpus_per_worker))
        return slots

    def find_available_hosts(self):
        """[Host(node id, slots)] of the alive nodes with a slot, in Ray's
        order. Raises DiscoveryError if Ray cannot be asked."""
        try:
            nodes = ray.nodes()
        except ray.exceptions.RayError as e:
            raise DiscoveryError(f"cannot list the Ray nodes: {e}") from None
        out = []
        for node in nodes:
            if not node.get("Alive"):
                continue
            slots = self._slots(node.get("Resources", {}))
            if slots > 0:
                self.node_ips[node["NodeID"]] = node["NodeManagerAddress"]
                out.append(Host(node["NodeID"], slots))
        return out

    def find_available_hosts_and_slots(self):
        """Upstream's form: {host: slots}."""
        return {h.name: h.slots for h in self.find_available_hosts()}


class MappingDiscovery:
    """Wraps an upstream-style discovery (find_available_hosts_and_slots()
    -> {host: slots}; hosts are Ray node ids or node addresses), as
    `settings.discovery` of upstream's ElasticRayExecutor with
    override_discovery=False."""

    def __init__(self, discovery):
        self._discovery = discovery
        self.node_ips = {}

    def describe(self):
        return f"the host discovery {type(self._discovery).__name__}"

    def find_available_hosts(self):
        try:
            found = self._discovery.find_available_hosts_and_slots()
        except Exception as e:  # noqa: BLE001 - the user's code; the driver retries
            raise DiscoveryError(f"{self.describe()} raised {type(e).__name__}: {e}") from None
        return [Host(str(name), int(slots)) for name, slots in found.items() if int(slots) > 0]
