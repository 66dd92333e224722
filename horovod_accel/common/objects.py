"""The framework-neutral half of the object collectives (broadcast_object,
allgather_object): cloudpickle serialization and the core names. Adapters
move the bytes with their own tensor type.

Names: an object op runs two collectives, the payload size then the bytes,
named '<name>.sz' and '<name>.t'. Without a name, <name> is the op itself
('broadcast_object', 'allgather_object'), the same on every rank whatever
object each rank passes (non-roots may pass None) and whatever failed or
joined before, unlike upstream's type(obj).__name__ or a counter. Object ops
block, and a name stays reserved until its op is synchronized, so the k-th
unnamed call of one rank always meets the k-th call of the others. Two
threads of one rank running the same unnamed object op at once get a
ValueError for the second: give them names.
"""
import io

import cloudpickle


def object_op_names(op, name):
    """(size name, payload name) of object op `op` called with `name`."""
    base = op if name is None else str(name)
    return f"{base}.sz", f"{base}.t"


def serialize(obj):
    """obj -> bytes (cloudpickle, so lambdas and local classes work)."""
    buf = io.BytesIO()
    cloudpickle.dump(obj, buf)
    return buf.getvalue()


def deserialize(data):
    """bytes (or any bytes-like) -> the object."""
    return cloudpickle.loads(bytes(data))


def broadcast_object_with(obj, is_root, broadcast_size, broadcast_bytes):
    """The broadcast_object protocol over an adapter's tensor broadcasts:
    the root serializes `obj`, broadcasts the payload size, then the bytes;
    the others receive both and deserialize. Returns the root's object.

    broadcast_size(n) -> int: broadcasts n (the root's value; others pass 0).
    broadcast_bytes(data, n) -> bytes-like: broadcasts the n bytes (the root
    passes its payload, the others None).
    """
    if is_root:
        data = serialize(obj)
        broadcast_size(len(data))
        broadcast_bytes(data, len(data))
        return obj
    n = int(broadcast_size(0))
    return deserialize(broadcast_bytes(None, n))


def allgather_object_with(obj, allgather_size, allgather_bytes):
    """The allgather_object protocol: every rank's serialized size, then all
    payloads concatenated in set-rank order; returns the list of objects.

    allgather_size(n) -> list of ints (one per rank);
    allgather_bytes(data) -> bytes-like (every rank's payload, concatenated).
    """
    data = serialize(obj)
    sizes = [int(n) for n in allgather_size(len(data))]
    gathered = bytes(allgather_bytes(data))
    out, offset = [], 0
    for n in sizes:
        out.append(deserialize(gathered[offset:offset + n]))
        offset += n
    return out
