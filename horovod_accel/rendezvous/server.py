"""The rendezvous key-value store server: horovodrun serves it to its ranks,
and under mpirun rank 0 serves it to the others (common/mpi.py).

Ranks reach it through HOROVOD_GLOO_RENDEZVOUS_ADDR/PORT and authenticate with
the per-job secret in _HOROVOD_SECRET_KEY. The core uses it (C++ client in
csrc/common/store/tcp_store.cc) to exchange addresses while building
communicators; tests and Python code use horovod_accel.rendezvous.client.
The wire protocol is the table csrc/common/store/wire_protocol.def (NOTE
[Rendezvous store wire protocol]; constants and framing in protocol.py):
length-prefixed binary frames over TCP; the first frame
authenticates with the job secret (else REFUSED and closed); then SET, GET
(held in the server until the key is set or its timeout passes), ADD, DELETE.

Threading: one accept thread plus one daemon thread per connection (jobs have
few clients). A GET waits on a condition variable inside its connection's
thread, so it never delays other clients.
"""
import hmac
import socket
import sys
import threading
import time

from horovod_accel.rendezvous import protocol as sp


class RendezvousStoreServer:
    """Serves the store on (host, port); port 0 picks a free port.

    Lifetime: start() binds and returns the port; stop() closes every socket
    and wakes blocked GETs. Usable as a context manager. The data lives in
    memory for the life of the server only.
    """

    def __init__(self, secret, host="127.0.0.1", port=0, verbose=False):
        if not secret:
            raise ValueError("the rendezvous store needs a non-empty job secret")
        self._secret = secret.encode() if isinstance(secret, str) else bytes(secret)
        self._host = host
        self._port = port
        self._verbose = verbose
        self._data = {}
        self._cond = threading.Condition()
        self._listener = None
        self._conns = set()
        self._conns_lock = threading.Lock()
        self._stopped = False
        self._accept_thread = None

    @property
    def port(self):
        return self._port

    @property
    def secret(self):
        return self._secret

    def start(self):
        """Binds and starts serving; returns the bound port. Does not block."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self._host, self._port))
        listener.listen(128)
        self._listener = listener
        self._port = listener.getsockname()[1]
        self._accept_thread = threading.Thread(
            target=self._accept_loop, name="hvda-store-accept", daemon=True)
        self._accept_thread.start()
        self._log(f"rendezvous store listening on {self._host}:{self._port}")
        return self._port

    def stop(self):
        """Closes the listener and all connections; blocked GETs end. Idempotent."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._listener is not None:
            try:
                self._listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._listener.close()
        with self._conns_lock:
            conns = list(self._conns)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()
        if self._accept_thread is not None:
            self._accept_thread.join(timeout=5)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    # ---- in-process access (the launcher's own keys, e.g. the elastic driver) ----

    def set_local(self, key, value):
        """Sets key (str) to value (str or bytes) as a client's SET would."""
        with self._cond:
            self._data[key.encode()] = value.encode() if isinstance(value, str) else bytes(value)
            self._cond.notify_all()

    def get_local(self, key):
        """The bytes under key (str), or None; never blocks."""
        with self._cond:
            return self._data.get(key.encode())

    # ---- internals ----

    def _log(self, msg):
        # The launcher's console output that --verbose asks for (like
        # runner/output.console_message), not library logging (common/log.py).
        if self._verbose:
            print(f"horovodrun: {msg}", file=sys.stderr, flush=True)

    def _accept_loop(self):
        while True:
            try:
                conn, peer = self._listener.accept()
            except OSError:
                return  # listener closed by stop()
            sp.set_nodelay(conn)
            with self._conns_lock:
                if self._stopped:
                    conn.close()
                    return
                self._conns.add(conn)
            threading.Thread(target=self._serve, args=(conn, peer),
                             name=f"hvda-store-{peer[0]}:{peer[1]}", daemon=True).start()

    def _serve(self, conn, peer):
        try:
            if self._authenticate(conn, peer):
                while True:
                    code, fields = sp.read_frame(conn)
                    if not self._handle(conn, code, fields):
                        break
        except sp.ConnectionClosed:
            pass
        except (sp.ProtocolError, OSError) as e:
            if not self._stopped:
                self._log(f"rendezvous store dropped {peer[0]}:{peer[1]}: {e}")
        finally:
            with self._conns_lock:
                self._conns.discard(conn)
            conn.close()

    def _authenticate(self, conn, peer):
        try:
            code, fields = sp.read_frame(conn, max_size=sp.MAX_HELLO_FRAME)
        except sp.ProtocolError as e:
            self._refuse(conn, peer, f"malformed first frame ({e})")
            return False
        if code != sp.OP_HELLO or len(fields) != 2 or fields[0] != sp.MAGIC:
            self._refuse(conn, peer, "this is the horovodrun rendezvous store; the client speaks "
                                     "another protocol or version (expected magic "
                                     f"{sp.MAGIC.decode()})")
            return False
        if not hmac.compare_digest(fields[1], self._secret):
            self._refuse(conn, peer, "wrong job secret (_HOROVOD_SECRET_KEY); only processes "
                                     "started by this horovodrun may connect")
            return False
        sp.send_frame(conn, sp.ST_OK)
        return True

    def _refuse(self, conn, peer, why):
        self._log(f"rendezvous store refused {peer[0]}:{peer[1]}: {why}")
        try:
            sp.send_frame(conn, sp.ST_REFUSED, why)
        except OSError:
            pass

    def _handle(self, conn, code, fields):
        """Serves one request; returns False when the connection must close."""
        try:
            if code == sp.OP_SET and len(fields) == 2:
                with self._cond:
                    self._data[fields[0]] = fields[1]
                    self._cond.notify_all()
                sp.send_frame(conn, sp.ST_OK)
            elif code == sp.OP_GET and len(fields) == 2:
                self._get(conn, fields[0], int(fields[1]))
            elif code == sp.OP_ADD and len(fields) == 2:
                delta = int(fields[1])
                with self._cond:
                    old = self._data.get(fields[0], b"0")
                    try:
                        new = int(old) + delta
                    except ValueError:
                        sp.send_frame(conn, sp.ST_ERROR, f"ADD on key {fields[0]!r} whose value "
                                                         "is not an integer")
                        return True
                    self._data[fields[0]] = str(new).encode()
                    self._cond.notify_all()
                sp.send_frame(conn, sp.ST_OK, str(new))
            elif code == sp.OP_DELETE and len(fields) == 1:
                with self._cond:
                    existed = self._data.pop(fields[0], None) is not None
                sp.send_frame(conn, sp.ST_OK, b"1" if existed else b"0")
            else:
                sp.send_frame(conn, sp.ST_ERROR, f"unknown request code {code:#x} with "
                                                 f"{len(fields)} fields")
                return False
        except ValueError as e:  # int() of a malformed field
            sp.send_frame(conn, sp.ST_ERROR, f"malformed request: {e}")
            return False
        return True

    def _get(self, conn, key, timeout_ms):
        deadline = None if timeout_ms < 0 else time.monotonic() + timeout_ms / 1000.0
        with self._cond:
            while key not in self._data and not self._stopped:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                self._cond.wait(timeout=left)
            value = self._data.get(key)
        if value is not None:
            sp.send_frame(conn, sp.ST_OK, value)
        elif self._stopped:
            raise sp.ConnectionClosed("store stopped")
        else:
            sp.send_frame(conn, sp.ST_TIMEOUT, f"key {key.decode(errors='replace')!r} was not set "
                                               f"within {timeout_ms} ms")
