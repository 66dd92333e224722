"""Which hosts are this machine, and which address remote ranks use to reach
the rendezvous store. Interface addresses come from psutil.net_if_addrs()
(as upstream Horovod's launcher reads them): any interface name length, and
the same answer on every platform psutil supports. Only IPv4 addresses are
used, as the store and Gloo's address exchange expect."""
import functools
import socket

import psutil


def interface_addresses():
    """{interface name: [its IPv4 addresses, in the order the OS lists them]}
    for every interface of this machine, including those without an IPv4
    address (empty list). Read anew on every call (interfaces come and go)."""
    return {name: [a.address for a in addrs if a.family == socket.AF_INET]
            for name, addrs in psutil.net_if_addrs().items()}


def _unknown_interface(ifname, known):
    return ValueError(f"network interface '{ifname}' does not exist on this machine "
                      f"(it has: {', '.join(sorted(known)) or 'none'}); check the name given to "
                      "--network-interfaces, nics= or HOROVOD_GLOO_IFACE")


def interface_ipv4(ifname):
    """The (first) IPv4 address of network interface `ifname`, or None if it
    has none. Raises ValueError naming this machine's interfaces if there is
    no interface of that name."""
    known = interface_addresses()
    if ifname not in known:
        raise _unknown_interface(ifname, known)
    return next(iter(known[ifname]), None)


def first_interface_ipv4(nics):
    """The IPv4 address of the first of `nics` that exists here and has one,
    or None. Names that do not exist here are skipped (other hosts may have
    them); driver_address_for names them when none fits."""
    known = interface_addresses()
    return next((known[nic][0] for nic in nics or () if known.get(nic)), None)


def interface_with_address(ip):
    """Name of this machine's interface whose IPv4 address is `ip`, or None."""
    return next((name for name, ips in interface_addresses().items() if ip in ips), None)


@functools.cache
def local_addresses():
    """IPv4 addresses of this machine's interfaces plus its host names."""
    out = {"localhost", "127.0.0.1", socket.gethostname(), socket.getfqdn()}
    for ips in interface_addresses().values():
        out.update(ips)
    try:
        out.update(socket.gethostbyname_ex(socket.gethostname())[2])
    except OSError:
        pass
    return frozenset(out)


@functools.cache
def is_local_host(name):
    """True if `name` (as given in -H/--hostfile) is this machine. May do a DNS
    lookup; a name that does not resolve counts as remote (ssh will report it)."""
    if name in local_addresses() or name.startswith("127."):
        return True
    try:
        return socket.gethostbyname(name) in local_addresses()
    except OSError:
        return False


def driver_address_for(remote_host, nics):
    """The address of this machine that `remote_host` can use to reach it:
    the first of `nics` that has an IPv4 address if given, else the source
    address the kernel routes to remote_host from (no packet is sent)."""
    ip = first_interface_ipv4(nics)
    if ip:
        return ip
    if nics:
        known = interface_addresses()
        missing = [nic for nic in nics if nic not in known]
        why = (f"; {', '.join(missing)} do{'es' if len(missing) == 1 else ''} not exist here "
               f"(this machine has: {', '.join(sorted(known))})" if missing else "")
        raise ValueError(f"none of the network interfaces {', '.join(nics)} "
                         f"(--network-interfaces) has an IPv4 address on this machine{why}")
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((socket.gethostbyname(remote_host), 9))
            return s.getsockname()[0]
    except OSError as e:
        raise ValueError(f"cannot find a route from this machine to host '{remote_host}': "
                         f"{e}; check the host name or pass --network-interfaces") from None
