"""Wire protocol of the rendezvous store (shared by the Python server and client).

The C++ client (csrc/common/store/tcp_store.cc) implements the same protocol;
change both together and bump MAGIC when the format changes.

NOTE [Rendezvous store wire protocol]
Transport: one TCP connection per client; several are fine.

Frame:   u32 big-endian N, then N payload bytes. N <= MAX_FRAME (64 MiB);
         the first frame of a connection must be <= MAX_HELLO_FRAME (4 KiB),
         so an unauthenticated peer cannot make the server allocate much.
Payload: u8 code, then zero or more fields, each a u32 big-endian length
         followed by that many bytes. Integers inside fields are ASCII decimal.

Requests (client -> server); exactly one in flight per connection:
  0x01 HELLO  [MAGIC, secret]  must be the first frame -> OK [] | REFUSED [msg]
  0x02 SET    [key, value]                           -> OK []
  0x03 GET    [key, timeout_ms]  blocks in the server until the key is set
                                 (timeout_ms < 0: no limit)
                                                     -> OK [value] | TIMEOUT [msg]
  0x04 ADD    [key, delta]       atomic; a missing key counts as 0; the value
                                 is stored as ASCII decimal -> OK [new value]
  0x05 DELETE [key]                                  -> OK ["1" | "0"]
Replies (server -> client):
  0x80 OK [fields]   0x81 TIMEOUT [msg]
  0x82 REFUSED [msg] (wrong magic or secret; the server then closes)
  0x83 ERROR [msg]   (malformed request, e.g. ADD on a non-integer value;
                      after a malformed frame the server closes)
"""
import socket
import struct

MAGIC = b"hvda-store/1"
MAX_FRAME = 64 << 20
MAX_HELLO_FRAME = 4096

OP_HELLO = 0x01
OP_SET = 0x02
OP_GET = 0x03
OP_ADD = 0x04
OP_DELETE = 0x05

ST_OK = 0x80
ST_TIMEOUT = 0x81
ST_REFUSED = 0x82
ST_ERROR = 0x83

_U32 = struct.Struct(">I")


class ProtocolError(Exception):
    """The peer sent bytes that do not follow the protocol, or closed mid-frame."""


class ConnectionClosed(ProtocolError):
    """The peer closed the connection at a frame boundary."""


def encode_frame(code, *fields):
    """Returns the bytes of one frame; fields are bytes or str (UTF-8)."""
    parts = [bytes([code])]
    for f in fields:
        b = f.encode() if isinstance(f, str) else bytes(f)
        parts.append(_U32.pack(len(b)))
        parts.append(b)
    payload = b"".join(parts)
    if len(payload) > MAX_FRAME:
        raise ValueError(f"store frame of {len(payload)} bytes exceeds the {MAX_FRAME}-byte limit")
    return _U32.pack(len(payload)) + payload


def decode_payload(payload):
    """Splits a payload into (code, [field bytes]); raises ProtocolError if malformed."""
    if not payload:
        raise ProtocolError("empty frame")
    code, fields, pos = payload[0], [], 1
    while pos < len(payload):
        if pos + 4 > len(payload):
            raise ProtocolError("truncated field length")
        (n,) = _U32.unpack_from(payload, pos)
        pos += 4
        if pos + n > len(payload):
            raise ProtocolError("truncated field")
        fields.append(payload[pos:pos + n])
        pos += n
    return code, fields


def _recv_exact(sock, n, at_boundary):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            if at_boundary and not buf:
                raise ConnectionClosed("connection closed by peer")
            raise ProtocolError("connection closed in the middle of a frame")
        buf += chunk
    return bytes(buf)


def read_frame(sock, max_size=MAX_FRAME):
    """Blocks until one whole frame arrives (honouring the socket's timeout,
    which raises socket.timeout); returns (code, fields)."""
    (n,) = _U32.unpack(_recv_exact(sock, 4, at_boundary=True))
    if n > max_size:
        raise ProtocolError(f"frame of {n} bytes exceeds the {max_size}-byte limit")
    return decode_payload(_recv_exact(sock, n, at_boundary=False))


def send_frame(sock, code, *fields):
    sock.sendall(encode_frame(code, *fields))


def set_nodelay(sock):
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        pass
