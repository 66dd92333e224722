"""The Python client of the rendezvous store (protocol: protocol.py, defined
once in csrc/common/store/wire_protocol.def). Every Python module that talks
to a store, or probes one, goes through StoreClient.

    with StoreClient.from_env() as store:      # inside a rank started by horovodrun
        store.set("ready/0", b"1")
        value = store.get("ready/1", timeout=30)  # blocks until rank 1 sets it

Thread-safety: calls are serialised on one connection by a lock, so a blocking
get() delays other calls on the same client; give each thread its own client
when that matters.
"""
import os
import socket
import threading
import time

from horovod_accel.rendezvous import protocol as sp


class StoreError(RuntimeError):
    """The store could not be reached, refused us, or the connection broke."""


class StoreTimeoutError(StoreError, TimeoutError):
    """get() timed out: nobody set the key in time."""


class StoreAuthError(StoreError):
    """The store refused this client (wrong job secret or protocol version)."""


def _b(x):
    return x.encode() if isinstance(x, str) else bytes(x)


class StoreClient:
    """One authenticated connection. Connecting retries until `timeout` seconds
    pass (the server may start slightly after the client). `timeout` is also
    the default for get() and the limit for every other call's reply."""

    def __init__(self, host, port, secret, timeout=30.0):
        self._addr = f"{host}:{port}"
        self._timeout = float(timeout)
        self._lock = threading.Lock()
        self._sock = self._connect(host, int(port), _b(secret))

    @classmethod
    def from_env(cls, timeout=None):
        """Connects with the variables horovodrun exports to every rank."""
        host = os.environ.get("HOROVOD_GLOO_RENDEZVOUS_ADDR")
        port = os.environ.get("HOROVOD_GLOO_RENDEZVOUS_PORT")
        if not host or not port:
            raise StoreError("HOROVOD_GLOO_RENDEZVOUS_ADDR/PORT are not set; was this process "
                             "started by horovodrun?")
        from horovod_accel.common import settings  # noqa: PLC0415 (loads the core)
        secret = settings.read("_HOROVOD_SECRET_KEY")
        if not secret:
            raise StoreError("_HOROVOD_SECRET_KEY is not set, so the store at "
                             f"{host}:{port} would refuse this process; only the ranks horovodrun "
                             "starts get the job's secret (under mpirun, hvd.init() keeps it "
                             "to itself).")
        if timeout is None:
            timeout = settings.read("HOROVOD_START_TIMEOUT")
        return cls(host, port, secret, timeout)

    @staticmethod
    def first_reachable(hosts, port, timeout=2.0):
        """The first of `hosts` (addresses of one store's machine) on which
        something accepts a TCP connection at `port`, or None. One attempt per
        host, each bounded by `timeout` seconds, no handshake and no retry: a
        probe for choosing the address, not a proof that the store is there
        (the StoreClient then opened on it authenticates)."""
        for host in hosts:
            try:
                with socket.create_connection((host, int(port)), timeout=timeout):
                    return host
            except OSError:
                continue
        return None

    def _connect(self, host, port, secret):
        deadline = time.monotonic() + self._timeout
        delay = 0.05
        while True:
            try:
                sock = socket.create_connection((host, port), timeout=max(0.1, deadline - time.monotonic()))
                break
            except OSError as e:
                if time.monotonic() + delay > deadline:
                    raise StoreError(f"could not reach the horovodrun rendezvous store at "
                                     f"{self._addr}: {e}; was this process started by horovodrun?"
                                     ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.5)
        sp.set_nodelay(sock)
        try:
            sock.settimeout(self._timeout)
            sp.send_frame(sock, sp.OP_HELLO, sp.MAGIC, secret)
            code, fields = sp.read_frame(sock)
        except (OSError, sp.ProtocolError) as e:
            sock.close()
            raise StoreError(f"rendezvous store at {self._addr} did not answer the handshake: "
                             f"{e}") from None
        if code == sp.ST_REFUSED:
            sock.close()
            why = fields[0].decode(errors="replace") if fields else "no reason given"
            raise StoreAuthError(f"rendezvous store at {self._addr} refused this process: {why}")
        if code != sp.ST_OK:
            sock.close()
            raise StoreError(f"rendezvous store at {self._addr} answered the handshake with "
                             f"unexpected code {code:#x}")
        return sock

    def _call(self, reply_timeout, code, *fields):
        with self._lock:
            if self._sock is None:
                raise StoreError(f"connection to the rendezvous store at {self._addr} is closed")
            try:
                self._sock.settimeout(reply_timeout)
                sp.send_frame(self._sock, code, *fields)
                status, out = sp.read_frame(self._sock)
            except (OSError, sp.ProtocolError) as e:
                # The stream may be mid-reply: it cannot be reused.
                self._sock.close()
                self._sock = None
                raise StoreError(f"lost the connection to the rendezvous store at {self._addr}: "
                                 f"{e} (did horovodrun exit?)") from None
        if status == sp.ST_OK:
            return out
        msg = out[0].decode(errors="replace") if out else ""
        if status == sp.ST_TIMEOUT:
            raise StoreTimeoutError(f"rendezvous store: {msg}")
        raise StoreError(f"rendezvous store at {self._addr} rejected the request: {msg}")

    def set(self, key, value):
        """Stores value (bytes or str) under key; wakes every get() waiting for it."""
        self._call(self._timeout, sp.OP_SET, _b(key), _b(value))

    def get(self, key, timeout=None):
        """Blocks until key is set and returns its bytes. timeout in seconds
        (None: the client's default; negative: no limit). Raises StoreTimeoutError."""
        t = self._timeout if timeout is None else float(timeout)
        if t < 0:
            (value,) = self._call(None, sp.OP_GET, _b(key), b"-1")
        else:
            (value,) = self._call(t + 10.0, sp.OP_GET, _b(key), str(int(t * 1000)))
        return value

    def add(self, key, delta=1):
        """Atomically adds delta to the integer stored at key (missing = 0); returns the sum."""
        (value,) = self._call(self._timeout, sp.OP_ADD, _b(key), str(int(delta)))
        return int(value)

    def delete(self, key):
        """Removes key; returns whether it existed."""
        (existed,) = self._call(self._timeout, sp.OP_DELETE, _b(key))
        return existed == b"1"

    def close(self):
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
