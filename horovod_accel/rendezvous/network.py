"""Which hosts are this machine, and which address remote ranks use to reach
horovodrun's rendezvous store. Linux-oriented (interface addresses by ioctl)."""
import fcntl
import functools
import socket
import struct

_SIOCGIFADDR = 0x8915


def interface_ipv4(ifname):
    """IPv4 address of a network interface, or None if it has none."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            req = struct.pack("256s", ifname.encode()[:15])
            return socket.inet_ntoa(fcntl.ioctl(s.fileno(), _SIOCGIFADDR, req)[20:24])
        except OSError:
            return None


def interface_with_address(ip):
    """Name of this machine's interface whose IPv4 address is `ip`, or None."""
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError:
        return None
    return next((name for name in names if interface_ipv4(name) == ip), None)


@functools.lru_cache(maxsize=None)
def local_addresses():
    """IPv4 addresses of this machine's interfaces plus its host names."""
    out = {"localhost", "127.0.0.1", socket.gethostname(), socket.getfqdn()}
    try:
        for _, name in socket.if_nameindex():
            ip = interface_ipv4(name)
            if ip:
                out.add(ip)
    except OSError:
        pass
    try:
        out.update(socket.gethostbyname_ex(socket.gethostname())[2])
    except OSError:
        pass
    return frozenset(out)


@functools.lru_cache(maxsize=None)
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
    for nic in nics or ():
        ip = interface_ipv4(nic)
        if ip:
            return ip
    if nics:
        raise ValueError(f"none of the network interfaces {', '.join(nics)} "
                         "(--network-interfaces) has an IPv4 address on this machine")
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((socket.gethostbyname(remote_host), 9))
            return s.getsockname()[0]
    except OSError as e:
        raise ValueError(f"cannot find a route from this machine to host '{remote_host}': "
                         f"{e}; check the host name or pass --network-interfaces") from None
