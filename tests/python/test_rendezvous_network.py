"""horovod_accel/rendezvous/network.py: interface addresses from
psutil.net_if_addrs(), on a fake table of interfaces (names longer than the
15 characters an ioctl request holds, IPv6-only and address-less ones) and on
this machine, where the IPv4 answers must be those the kernel's SIOCGIFADDR
gives (the reading network.py used before psutil)."""
import socket
from collections import namedtuple

import psutil
import pytest

from horovod_accel.rendezvous import network

Addr = namedtuple("Addr", "family address netmask broadcast ptp")
LONG = "enp0s31f6-storage-fabric"  # 24 characters


def _v4(ip):
    return Addr(socket.AF_INET, ip, "255.255.255.0", None, None)


def _v6(ip):
    return Addr(socket.AF_INET6, ip, None, None, None)


def _mac():
    return Addr(psutil.AF_LINK, "02:00:00:00:00:01", None, None, None)


FAKE = {
    "lo": [_v4("127.0.0.1"), _v6("::1")],
    "eth0": [_mac(), _v6("fd00::2"), _v4("10.1.2.3"), _v4("10.1.2.4")],
    LONG: [_v4("192.168.7.9"), _mac()],
    "v6only": [_v6("fd00::9"), _mac()],
    "down0": [_mac()],
}


@pytest.fixture
def fake_interfaces(monkeypatch):
    monkeypatch.setattr(network.psutil, "net_if_addrs", lambda: FAKE)
    network.local_addresses.cache_clear()
    network.is_local_host.cache_clear()
    yield
    network.local_addresses.cache_clear()
    network.is_local_host.cache_clear()


def test_interface_addresses_keep_ipv4_only_in_order(fake_interfaces):
    assert network.interface_addresses() == {
        "lo": ["127.0.0.1"], "eth0": ["10.1.2.3", "10.1.2.4"], LONG: ["192.168.7.9"],
        "v6only": [], "down0": []}


def test_interface_ipv4(fake_interfaces):
    assert network.interface_ipv4("eth0") == "10.1.2.3"  # the first, as the kernel lists them
    assert network.interface_ipv4(LONG) == "192.168.7.9"
    assert network.interface_ipv4("v6only") is None
    assert network.interface_ipv4("down0") is None


def test_unknown_interface_is_a_clear_error(fake_interfaces):
    with pytest.raises(ValueError) as e:
        network.interface_ipv4("ib0")
    assert str(e.value) == (
        f"network interface 'ib0' does not exist on this machine (it has: down0, {LONG}, eth0, lo, "
        "v6only); check the name given to --network-interfaces, nics= or HOROVOD_GLOO_IFACE")


def test_interface_with_address(fake_interfaces):
    assert network.interface_with_address("192.168.7.9") == LONG
    assert network.interface_with_address("10.1.2.4") == "eth0"  # a secondary address too
    assert network.interface_with_address("127.0.0.1") == "lo"
    assert network.interface_with_address("10.9.9.9") is None


def test_first_interface_ipv4_skips_missing_and_address_less(fake_interfaces):
    assert network.first_interface_ipv4(["ib0", "v6only", LONG, "eth0"]) == "192.168.7.9"
    assert network.first_interface_ipv4(["ib0", "down0"]) is None
    assert network.first_interface_ipv4(None) is None


def test_driver_address_for_named_interfaces(fake_interfaces):
    assert network.driver_address_for("far-host", ["ib0", "eth0"]) == "10.1.2.3"
    with pytest.raises(ValueError) as e:
        network.driver_address_for("far-host", ["ib0", "v6only"])
    assert str(e.value) == (
        "none of the network interfaces ib0, v6only (--network-interfaces) has an IPv4 address on "
        f"this machine; ib0 does not exist here (this machine has: down0, {LONG}, eth0, lo, v6only)")
    with pytest.raises(ValueError, match="interfaces v6only .* has an IPv4 address on this machine$"):
        network.driver_address_for("far-host", ["v6only"])


def test_local_addresses_and_hosts(fake_interfaces):
    addrs = network.local_addresses()
    assert {"127.0.0.1", "10.1.2.3", "10.1.2.4", "192.168.7.9", "localhost",
            socket.gethostname()} <= addrs
    assert network.is_local_host("10.1.2.4") and network.is_local_host("127.0.0.5")
    assert not network.is_local_host("192.0.2.254")


def _ioctl_ipv4(name):
    """The interface's address as the SIOCGIFADDR ioctl reads it, or None."""
    fcntl = pytest.importorskip("fcntl")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            req = name.encode()[:15].ljust(256, b"\0")
            return socket.inet_ntoa(fcntl.ioctl(s.fileno(), 0x8915, req)[20:24])
        except OSError:
            return None


@pytest.mark.skipif(not hasattr(socket, "if_nameindex"), reason="needs socket.if_nameindex")
def test_this_machines_ipv4_answers_are_the_kernels():
    names = [name for _, name in socket.if_nameindex() if len(name) <= 15]
    assert names, "this machine lists no interfaces"
    for name in names:
        assert network.interface_ipv4(name) == _ioctl_ipv4(name), name
        ip = network.interface_ipv4(name)
        if ip:  # (another interface may hold the same address)
            assert ip in network.interface_addresses()[network.interface_with_address(ip)]
    assert "127.0.0.1" in network.local_addresses()


def test_mpi_root_addresses_follow_gloo_iface(fake_interfaces, monkeypatch):
    """Under mpirun rank 0 sends its store addresses before the others can
    fail, so a HOROVOD_GLOO_IFACE that does not exist (or has no IPv4 address)
    gives no address instead of raising, with the reason the other hosts'
    ranks then fail with (naming HOROVOD_GLOO_IFACE and what is wrong)."""
    from horovod_accel.common import mpi
    for iface, expected, why in ((LONG, ["192.168.7.9"], ""), ("ib0", [], "ib0"),
                                 ("v6only", [], "has no IPv4 address")):
        monkeypatch.setenv("HOROVOD_GLOO_IFACE", iface)
        addrs, error = mpi._root_addresses()
        assert addrs == expected, iface
        assert (why in error and error.startswith(f"HOROVOD_GLOO_IFACE={iface}")) if why \
            else error == "", (iface, error)
    monkeypatch.delenv("HOROVOD_GLOO_IFACE")
    unset, error = mpi._root_addresses()  # every local address but loopback's
    assert {"10.1.2.3", "10.1.2.4", "192.168.7.9"} <= set(unset) and "127.0.0.1" not in unset
    assert error == ""


def test_mpi_store_address_gives_rank_0s_reason(monkeypatch):
    """A rank on another host that gets no address from rank 0 fails with
    rank 0's reason, not a generic 'set HOROVOD_GLOO_IFACE'."""
    from horovod_accel.common import mpi
    root = {"host": "h0", "port": 1234, "addrs": [],
            "addrs_error": "HOROVOD_GLOO_IFACE=ib0: no interface 'ib0' on this host"}
    with pytest.raises(mpi.MpiError, match="on rank 0, HOROVOD_GLOO_IFACE=ib0: no interface"):
        mpi._store_address(root, False, 3)
