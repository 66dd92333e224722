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
