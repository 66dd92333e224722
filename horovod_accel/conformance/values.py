"""Deterministic inputs: every value is a function of (case seed, rank,
element index), so every rank can build every other rank's input on the host
and compute the exact expected result without communicating.

Two families of values:

- reduce values (`reduce_input`), for allreduce / grouped_allreduce /
  reducescatter: small numbers whose sums, minima, maxima and products are
  exactly representable in the tensor's dtype for the ranks of the set (the
  amplitude shrinks with the set size, see `amplitude`). Floats are
  multiples of a power-of-two step, so float16/bfloat16 sums are exact too.
- movement values (`movement_input`), for allgather / broadcast / alltoall:
  values spread over the dtype's range (int64 beyond 2^32, floats with
  fraction bits and a few inf/-inf/-0.0/nan), compared bit for bit, so a
  misplaced row, a truncated element or a canonicalised bit pattern shows.

Every tensor is built on the host (CPU) in int64/float64 and converted;
Ctx.to_device (cases.py) copies it to the device under test.
"""
import torch

INT_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
REDUCE_DTYPES = INT_DTYPES + FLOAT_DTYPES
MOVE_DTYPES = REDUCE_DTYPES + [torch.bool]

DTYPE_NAMES = {d: str(d).replace("torch.", "") for d in MOVE_DTYPES}

# dtype -> (step, exact_units, base_units) of reduce values: a value is
# k * step with |k| <= amplitude; |k| <= exact_units is exactly representable
# (and so is every partial sum bounded like that); base_units is the
# amplitude used when the set is small enough.
_REDUCE_SPEC = {
    torch.uint8: (1, 255, 3),
    torch.int8: (1, 127, 3),
    torch.int16: (1, 32767, 1000),
    torch.int32: (1, 2**31 - 1, 2**20),
    torch.int64: (1, 2**62, 2**40),
    torch.float16: (0.25, 2**11, 12),       # quarters in [-3, 3]
    torch.bfloat16: (0.25, 2**8, 12),       # quarters in [-3, 3]
    torch.float32: (0.25, 2**24, 2**14),
    torch.float64: (2.0**-8, 2**53, 2**38),
}

# Product values: factors in {-1, 1, 2} ({1, 2} unsigned), and only global
# ranks below PRODUCT_TWOS_RANKS contribute 2s, so |product| <= 2**6 = 64
# fits every dtype (int8 included) at any number of ranks.
PRODUCT_TWOS_RANKS = 6

_P = 4294967291          # prime below 2**32
_M2 = 2147483647         # 2**31 - 1


def _hashes(count, rank, seed):
    """Two int64 tensors of pseudo-random non-negative values, a function of
    (seed, rank, index) only."""
    i = torch.arange(count, dtype=torch.int64)
    h = (i * 2654435761 + (rank + 1) * 97531 + (seed % _P)) % _P
    h2 = (h * 48271 + 11) % _M2
    return h, h2


def amplitude(dtype, set_size, scaled=False):
    """Largest |k| used for reduce values of dtype over set_size ranks: every
    sum (and, when scaled, x prescale 0.5 then x postscale 3) stays exactly
    representable."""
    _, exact, base = _REDUCE_SPEC[dtype]
    per_rank = exact // (max(1, set_size) * (4 if scaled else 1))
    return max(1, min(base, per_rank))


def reduce_input(dtype, shape, rank, seed, set_size, kind, scaled=False):
    """Reduce input of one rank. kind: 'sum' (also Average/Min/Max) or 'product'."""
    count = 1
    for d in shape:
        count *= d
    h, _ = _hashes(count, rank, seed)
    unsigned = dtype == torch.uint8
    if kind == "product":
        if unsigned:
            k = h % 2 + 1 if rank < PRODUCT_TWOS_RANKS else torch.ones_like(h)
        else:
            choice = h % 3 if rank < PRODUCT_TWOS_RANKS else h % 2
            k = torch.tensor([-1, 1, 2], dtype=torch.int64)[choice]
        step = 1
    else:
        step = _REDUCE_SPEC[dtype][0]
        a = amplitude(dtype, set_size, scaled)
        k = h % (a + 1) if unsigned else h % (2 * a + 1) - a
    if dtype.is_floating_point:
        v = k.to(torch.float64) * step
    else:
        v = k
    return v.to(dtype).reshape(shape)


_SPECIALS = torch.tensor([float("inf"), float("-inf"), -0.0, float("nan")], dtype=torch.float64)


def movement_input(dtype, shape, rank, seed):
    """Movement input of one rank: wide, distinct-looking values (see module doc)."""
    count = 1
    for d in shape:
        count *= d
    h, h2 = _hashes(count, rank, seed)
    if dtype == torch.bool:
        return (h2 % 2 == 1).reshape(shape)
    if dtype == torch.uint8:
        v = h % 256
    elif dtype == torch.int8:
        v = h % 256 - 128
    elif dtype == torch.int16:
        v = h % 65536 - 32768
    elif dtype == torch.int32:
        v = h - 2**31
    elif dtype == torch.int64:
        v = h * 2**20 + h2 % 2**20 - 2**51
    else:
        if dtype == torch.float16:
            v = (h % 4097 - 2048).to(torch.float64) * 0.5
        elif dtype == torch.bfloat16:
            v = (h % 513 - 256).to(torch.float64) * 0.5
        elif dtype == torch.float32:
            v = (h % 2**24 - 2**23).to(torch.float64) * 2.0**-10
        else:
            v = (h * 2**20 + h2 % 2**20 - 2**51).to(torch.float64) * 2.0**-20
        special = h2 % 61 == 0
        v = torch.where(special, _SPECIALS[h % 4], v)
    return v.to(dtype).reshape(shape)
