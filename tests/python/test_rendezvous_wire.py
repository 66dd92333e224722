"""The rendezvous store's wire protocol against its one definition, the table
csrc/common/store/wire_protocol.def (NOTE [Rendezvous store wire protocol]).

How the two languages are held to one table: the C++ client derives its
constants from the table (wire_protocol.h includes it through X-macros;
tests/cpp/store_wire_test.cc and tcp_store_test.cc check its framing and the
bytes TcpStore sends against frames built from it). Python keeps literal
constants in protocol.py, so this module parses the table itself and builds
the expected bytes with an encoder of its own; it fails when protocol.py's
constants, the frames client.py sends, or the replies server.py gives differ
from the table in any code, field order or size. Both sides against one
table: the C++ client and the Python server cannot disagree without a test
failing. The pinned SET frame below is the same literal as in
store_wire_test.cc.
"""
import re
import socket
import struct
import threading
from pathlib import Path

import pytest

from horovod_accel.rendezvous import protocol as sp
from horovod_accel.rendezvous.client import StoreClient
from horovod_accel.rendezvous.server import RendezvousStoreServer

REPO = Path(__file__).resolve().parents[2]
TABLE = REPO / "csrc/common/store/wire_protocol.def"

_ENTRY = re.compile(r"HVDA_STORE_(TEXT|SIZE|REQUEST|REPLY)\((.*)\)\s*(//.*)?")
_ARGS = {
    "TEXT": re.compile(r'(\w+),\s*"([^"]*)"'),
    "SIZE": re.compile(r"(\w+),\s*(\d+)"),
    "REQUEST": re.compile(r'(\w+),\s*(0x[0-9a-fA-F]{2}),\s*"([^"]*)",\s*"([^"]*)"'),
    "REPLY": re.compile(r'(\w+),\s*(0x[0-9a-fA-F]{2}),\s*"([^"]*)"'),
}
_REPLY_ITEM = re.compile(r"(\w+)\(([^)]*)\)")


def load_table(path=TABLE):
    """The table as {"constants": {Name: bytes | int}, "requests": {Name:
    (code, [fields], {Reply: [fields]})}, "replies": {Name: (code, [fields])}}.
    Every line must be blank, a // comment or one entry: a line this parser
    cannot read fails the test rather than being skipped."""
    table = {"constants": {}, "requests": {}, "replies": {}}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("//"):
            continue
        entry = _ENTRY.fullmatch(line)
        args = entry and _ARGS[entry.group(1)].fullmatch(entry.group(2).strip())
        assert args, f"{path.name}:{number}: cannot read {line!r}"
        kind, values = entry.group(1), args.groups()
        if kind == "TEXT":
            table["constants"][values[0]] = values[1].encode()
        elif kind == "SIZE":
            table["constants"][values[0]] = int(values[1])
        elif kind == "REQUEST":
            replies = {name: fields.split() for name, fields in _REPLY_ITEM.findall(values[3])}
            table["requests"][values[0]] = (int(values[1], 16), values[2].split(), replies)
        else:
            table["replies"][values[0]] = (int(values[1], 16), values[2].split())
    return table


SPEC = load_table()
# A value for every field name the table's requests use.
VALUES = {"magic": SPEC["constants"]["Magic"], "secret": b"s3", "key": b"k", "value": b"v",
          "timeout_ms": b"1500", "delta": b"12"}


def upper_snake(name):
    """The Python spelling of a table name: MaxHelloFrame -> MAX_HELLO_FRAME."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


def frame(code, fields):
    """This test's own encoder of the table's layout: a u32 big-endian length,
    a u8 code, then each field as a u32 big-endian length and its bytes."""
    assert SPEC["constants"]["LengthBytes"] == 4 and SPEC["constants"]["CodeBytes"] == 1
    payload = bytes([code]) + b"".join(struct.pack(">I", len(f)) + f for f in fields)
    return struct.pack(">I", len(payload)) + payload


def request_frame(name, values=VALUES):
    """Request `name` as the table lays it out, fields looked up by name."""
    code, fields, _ = SPEC["requests"][name]
    return frame(code, [values[f] for f in fields])


def read_raw_frame(sock):
    """One whole frame's bytes from sock, or b"" if the peer closed first."""
    head = _read_exactly(sock, 4)
    return head + _read_exactly(sock, struct.unpack(">I", head)[0]) if head else b""


def _read_exactly(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return b""
        buf += chunk
    return buf


def split_frame(raw):
    """(code, [fields]) of one raw frame, by this test's reading of the layout."""
    (n,) = struct.unpack_from(">I", raw)
    assert n == len(raw) - 4
    code, fields, pos = raw[4], [], 5
    while pos < len(raw):
        (size,) = struct.unpack_from(">I", raw, pos)
        fields.append(raw[pos + 4:pos + 4 + size])
        pos += 4 + size
    assert pos == len(raw), "a field runs past the frame"
    return code, fields


# ------------------------------------------------------------ the table itself


def test_table_is_complete_and_consistent():
    assert set(SPEC["requests"]) == {"Hello", "Set", "Get", "Add", "Delete"}
    assert set(SPEC["replies"]) == {"Ok", "Timeout", "Refused", "Error"}
    codes = [c for c, *_ in SPEC["requests"].values()] + [c for c, _ in SPEC["replies"].values()]
    assert len(set(codes)) == len(codes), "a code is used twice"
    for name, (_, fields, replies) in SPEC["requests"].items():
        assert fields and set(replies) <= set(SPEC["replies"]), name
        assert set(fields) <= set(VALUES), f"{name}: a field this test has no value for"


def test_cpp_derives_its_constants_from_the_table():
    """The C++ side has no copies to drift: its header includes the table for
    every kind of entry, and the client defines no code or magic of its own."""
    header = (REPO / "csrc/common/store/wire_protocol.h").read_text()
    assert header.count('#include "common/store/wire_protocol.def"') >= 1
    for kind in _ARGS:
        assert f"#define HVDA_STORE_{kind}(" in header, kind
    client = (REPO / "csrc/common/store/tcp_store.cc").read_text()
    assert '#include "common/store/wire_protocol.h"' in client
    assert not re.search(r"constexpr\s+\w+\s+k(Op|St)\w*\s*=|0x8[0-3]|\"hvda-store", client)


def test_the_magic_is_written_once_per_language():
    """Beside the table only protocol.py spells the magic (the version)."""
    magic = SPEC["constants"]["Magic"].decode()
    files = [p for p in (REPO / "horovod_accel").rglob("*.py")] + \
            [p for ext in ("*.h", "*.cc", "*.def") for p in (REPO / "csrc").rglob(ext)]
    holders = {p.relative_to(REPO).as_posix() for p in files if magic in p.read_text()}
    assert holders == {"horovod_accel/rendezvous/protocol.py", "csrc/common/store/wire_protocol.def"}


# ------------------------------------------------------------ protocol.py


def test_protocol_constants_match_the_table():
    for name, value in SPEC["constants"].items():
        assert getattr(sp, upper_snake(name)) == value, name
    for prefix, kind in (("OP_", "requests"), ("ST_", "replies")):
        ours = {n: getattr(sp, n) for n in dir(sp) if n.startswith(prefix)}
        assert ours == {prefix + upper_snake(n): spec[0] for n, spec in SPEC[kind].items()}


def test_set_frame_bytes_are_pinned():
    expected = ("0000000b"            # payload of 11 bytes
                "02"                  # Set
                "00000001" "6b"       # key "k"
                "00000001" "76")      # value "v"
    assert sp.encode_frame(sp.OP_SET, "k", "v").hex() == expected
    assert request_frame("Set").hex() == expected


def test_every_request_is_framed_in_the_tables_field_order():
    for name, (code, fields, _) in SPEC["requests"].items():
        assert sp.encode_frame(code, *(VALUES[f] for f in fields)) == request_frame(name), name
        raw = request_frame(name)
        assert sp.decode_payload(raw[4:]) == (code, [VALUES[f] for f in fields])


# ------------------------------------------------------------ client.py


class RecordingStore:
    """A fake store on 127.0.0.1 for one connection: records every request
    frame whole and answers each with the table's first reply for it, with
    `answers[name]` as the reply's fields."""

    def __init__(self, answers):
        self.answers = answers
        self.frames = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(10)  # a client that never connects ends the thread
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        by_code = {code: name for name, (code, _, _) in SPEC["requests"].items()}
        try:
            conn, _ = self._listener.accept()
        except OSError:  # timed out, or closed
            return
        conn.settimeout(10)
        with conn:
            while raw := read_raw_frame(conn):
                self.frames.append(raw)
                name = by_code[split_frame(raw)[0]]
                reply = next(iter(SPEC["requests"][name][2]))
                conn.sendall(frame(SPEC["replies"][reply][0], self.answers.get(name, [])))

    def close(self):
        self._listener.close()
        self._thread.join(timeout=15)
        assert not self._thread.is_alive(), "the fake store's thread did not end"


def test_client_sends_the_tables_frames():
    store = RecordingStore({"Get": [b"v"], "Add": [b"12"], "Delete": [b"1"]})
    try:
        with StoreClient("127.0.0.1", store.port, "s3", timeout=5) as client:
            client.set("k", "v")
            assert client.get("k", timeout=1.5) == b"v"
            assert client.add("k", 12) == 12
            assert client.delete("k") is True
    finally:
        store.close()
    expected = [request_frame(n) for n in ("Hello", "Set", "Get", "Add", "Delete")]
    assert [f.hex() for f in store.frames] == [f.hex() for f in expected]


def test_get_without_limit_sends_minus_one():
    store = RecordingStore({"Get": [b"v"]})
    try:
        with StoreClient("127.0.0.1", store.port, "s3", timeout=5) as client:
            client.get("k", timeout=-1)
    finally:
        store.close()
    assert store.frames[1] == request_frame("Get", {**VALUES, "timeout_ms": b"-1"})


# ------------------------------------------------------------ server.py


@pytest.fixture
def server():
    with RendezvousStoreServer("s3") as srv:
        yield srv


def _exchange(sock, request_name, values=VALUES):
    """Sends request `request_name` and checks the reply is one the table
    allows for it, with the fields the table names; returns (reply, fields)."""
    sock.sendall(request_frame(request_name, values))
    code, fields = split_frame(read_raw_frame(sock))
    names = {c: n for n, (c, _) in SPEC["replies"].items()}
    reply = names[code]
    allowed = SPEC["requests"][request_name][2]
    assert reply in allowed or reply == "Error", (request_name, reply)
    if reply in allowed:
        assert len(fields) == len(allowed[reply]), (request_name, reply, fields)
    return reply, fields


def test_server_answers_the_tables_frames(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        assert _exchange(s, "Hello") == ("Ok", [])
        assert _exchange(s, "Set") == ("Ok", [])
        assert _exchange(s, "Get") == ("Ok", [b"v"])
        assert _exchange(s, "Add", {**VALUES, "key": b"n"}) == ("Ok", [b"12"])
        assert _exchange(s, "Add", {**VALUES, "key": b"n", "delta": b"-2"}) == ("Ok", [b"10"])
        assert _exchange(s, "Delete", {**VALUES, "key": b"n"}) == ("Ok", [b"1"])
        assert _exchange(s, "Delete", {**VALUES, "key": b"n"}) == ("Ok", [b"0"])
        reply, (msg,) = _exchange(s, "Get", {**VALUES, "key": b"gone", "timeout_ms": b"0"})
        assert reply == "Timeout" and b"'gone' was not set within 0 ms" in msg
        reply, (msg,) = _exchange(s, "Add", VALUES)  # "v" is not an integer
        assert reply == "Error" and b"not an integer" in msg
        assert _exchange(s, "Get") == ("Ok", [b"v"]), "the connection survives an Error reply"
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        reply, (msg,) = _exchange(s, "Hello", {**VALUES, "secret": b"wrong"})
        assert reply == "Refused" and b"wrong job secret" in msg
        assert read_raw_frame(s) == b"", "the server closes after Refused"


def test_server_enforces_the_tables_frame_sizes(server):
    limit = SPEC["constants"]["MaxHelloFrame"]
    hello = request_frame("Hello", {**VALUES, "secret": b""})
    pad = limit - (len(hello) - 4)  # a secret that makes the payload exactly the limit
    for secret, why in ((b"x" * pad, b"wrong job secret"), (b"x" * (pad + 1), b"malformed first frame")):
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
            reply, (msg,) = _exchange(s, "Hello", {**VALUES, "secret": secret})
            assert reply == "Refused" and why in msg, (len(secret), msg)
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        assert _exchange(s, "Hello") == ("Ok", [])
        s.sendall(struct.pack(">I", SPEC["constants"]["MaxFrame"] + 1))
        assert read_raw_frame(s) == b"", "a frame above MaxFrame ends the connection"


# ------------------------------------------------------------ one client path


def test_only_the_client_and_the_server_speak_the_protocol():
    """Every other module reaches a store through StoreClient (or serves one
    with RendezvousStoreServer); none frames bytes of its own."""
    speakers = set()
    for path in (REPO / "horovod_accel").rglob("*.py"):
        text = path.read_text()
        if re.search(r"rendezvous(\.| import )protocol\b|from horovod_accel.rendezvous import .*\bprotocol\b",
                     text):
            speakers.add(path.relative_to(REPO / "horovod_accel").as_posix())
    assert speakers == {"rendezvous/client.py", "rendezvous/server.py"}


def test_no_module_opens_its_own_socket_outside_the_rendezvous_package():
    """Outside horovod_accel/rendezvous/ no module opens a TCP connection or a
    socket of its own: probing or talking to a store is StoreClient's job,
    serving one RendezvousStoreServer's, routes network.py's."""
    openers = set()
    for path in (REPO / "horovod_accel").rglob("*.py"):
        rel = path.relative_to(REPO / "horovod_accel").as_posix()
        if not rel.startswith("rendezvous/") and \
                re.search(r"create_connection\(|socket\.socket\(", path.read_text()):
            openers.add(rel)
    assert openers == set()


def test_first_reachable_probes_each_address_once(server):
    closed = socket.create_server(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    # The store listens on 127.0.0.1 only: 127.0.0.2 refuses at once.
    assert StoreClient.first_reachable(["127.0.0.2", "127.0.0.1"], server.port) == "127.0.0.1"
    assert StoreClient.first_reachable(["127.0.0.1"], str(server.port), timeout=0.5) == "127.0.0.1"
    assert StoreClient.first_reachable(["127.0.0.1", "127.0.0.2"], closed_port, timeout=0.5) is None
    assert StoreClient.first_reachable([], server.port) is None
