"""Wire protocol of the rendezvous store in Python: constants and framing,
shared by the server (server.py) and the client (client.py).

The one definition of the protocol is the table csrc/common/store/wire_protocol.def
(NOTE [Rendezvous store wire protocol]): message codes, field orders, sizes,
the magic. The core's C++ client (csrc/common/store/tcp_store.cc) derives its
constants from that table; the constants below are literal copies so that
importing this module reads no file, and tests/python/test_rendezvous_wire.py
fails if any of them, or the bytes client.py and server.py exchange, differ
from the table. Released launchers and cores talk through this format: do not
change it without a new MAGIC, and then change the table first.

Frame: u32 big-endian length, then a payload of a u8 code and fields, each a
u32 big-endian length and its bytes (integers inside fields: ASCII decimal).
"""
import socket
import struct

# One name per line of the table (Magic -> MAGIC, OP_ for requests, ST_ for replies).
MAGIC = b"hvda-store/1"
MAX_FRAME = 64 << 20
MAX_HELLO_FRAME = 4096
LENGTH_BYTES = 4
CODE_BYTES = 1

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
    code, fields, pos = payload[0], [], CODE_BYTES
    while pos < len(payload):
        if pos + LENGTH_BYTES > len(payload):
            raise ProtocolError("truncated field length")
        (n,) = _U32.unpack_from(payload, pos)
        pos += LENGTH_BYTES
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
    (n,) = _U32.unpack(_recv_exact(sock, LENGTH_BYTES, at_boundary=True))
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
