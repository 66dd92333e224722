"""Network interfaces for ranks on Ray nodes, and small Ray helpers (upstream
horovod.ray.utils' functions: Ray Train's Horovod backend imports
detect_nics and nics_to_env_var from here).

Interfaces: Ray already reaches every node at its node address, so the
interface that holds a node's address is one its ranks can talk over; this
replaces upstream's ring probe between task services.
"""
import ray

from horovod_accel.rendezvous import network


def node_interface():
    """Name of this machine's interface that holds the address of the Ray
    node this process runs on, or None. Runs anywhere Ray is initialized."""
    return network.interface_with_address(ray.util.get_node_ip_address())


def _probe(_=None):
    return node_interface()


def detect_nics(settings, all_host_names, node_workers=None):
    """Interfaces the ranks on `all_host_names` (node addresses or host names)
    can use; upstream's signature and result (a list, best first).

    settings.nics, if set, wins. When every host is this machine: the
    loopback interface. Otherwise the interface holding each node's Ray
    address, asked on every node (through `node_workers`, actors with an
    execute(fn) method, one per node; without them a zero-CPU task is placed
    on each host through Ray's `node:<address>` resource, so the names must
    then be node addresses). Blocks until every node answered.
    Raises ValueError if the nodes name their interfaces differently.
    """
    if getattr(settings, "nics", None):
        return list(settings.nics)
    names = list(dict.fromkeys(all_host_names))
    if all(network.is_local_host(h) for h in names):
        lo = network.interface_with_address("127.0.0.1")
        return [lo] if lo else []
    if node_workers:
        found = ray.get([w.execute.remote(_probe) for w in node_workers])
    else:
        probe = ray.remote(num_cpus=0)(_probe)
        found = ray.get([probe.options(resources={f"node:{h}": 0.001}).remote() for h in names])
    common = set(found)
    if None in common or len(common) != 1:
        raise ValueError(f"detect_nics: the interfaces holding the Ray nodes' addresses are "
                         f"{found} on {names}; pass nics=[...] to create_settings with an "
                         "interface every node has")
    return [found[0]]


def nics_to_env_var(nics):
    """The variables that make the ranks use `nics` (first one for Gloo)."""
    nics = list(nics)
    if not nics:
        return {}
    return {"HOROVOD_GLOO_IFACE": nics[0], "NCCL_SOCKET_IFNAME": ",".join(nics)}


def map_blocking(fn, collection):
    """ray.get([fn(x) for x in collection]): fn returns an ObjectRef."""
    return ray.get([fn(x) for x in collection])
