"""How JAX arrays cross into the core on the eager path (outside jax.jit),
how results come back, and the dtype rules every op checks (eager and
traced alike).

Inputs: a public op first turns its argument into a JAX value with
`as_array` (jax.Array and tracers as they are; numpy arrays, numpy scalars
and Python bool/int/float through `jnp.asarray`, so they get the dtype JAX
would give them: without jax_enable_x64 a float64 numpy array becomes
float32). The eager path then reads a concrete array through a host numpy
array (`to_host`):
- an array on a CPU device: `np.asarray(x)` is a zero-copy, read-only view
  of the array's buffer (checked with jaxlib 0.10.2: the view's address
  equals `x.unsafe_buffer_pointer()`); it waits until the array is computed;
- an array on any other device (GPU, TPU): copied to host memory. Handing
  device buffers to the core directly is a later step.
The caller keeps the jax.Array and its view alive until the core's Work
completes (common/handles.py keeps them).

Results are written by the core into host numpy arrays (preallocated here,
64-byte aligned, or allocated by the core: allgather, alltoall) and become
a jax.Array through `jax.device_put`: committed to the input's device when
the input is committed to one device, else uncommitted on JAX's default
device (where an uncommitted input lives). On a CPU device jaxlib 0.10.2's
device_put aliases a 64-byte-aligned host array instead of copying it (and
keeps it alive); a misaligned one, or any other device, gets a copy.
Aliasing is safe: nothing writes a result's host array after the op
completed.
"""
import jax
import jax.numpy as jnp
import numpy as np

# numpy dtype -> the core's dtype code (docs/design/core_binding.md; the codes
# are never renumbered). numpy sees JAX's bfloat16 as ml_dtypes' bfloat16.
DTYPE_CODES = {
    np.dtype(np.uint8): 0,
    np.dtype(np.int8): 1,
    np.dtype(np.int16): 2,
    np.dtype(np.int32): 3,
    np.dtype(np.int64): 4,
    np.dtype(np.float16): 5,
    np.dtype(jnp.bfloat16): 6,
    np.dtype(np.float32): 7,
    np.dtype(np.float64): 8,
    np.dtype(np.bool_): 9,
    np.dtype(np.uint16): 10,
}
BOOL = 9
FLOATING = frozenset({5, 6, 7, 8})
_SUPPORTED = ", ".join(str(d) for d in DTYPE_CODES)
_CONVERTIBLE = (np.ndarray, np.generic, bool, int, float)


def is_array(x):
    """True for what the ops treat as an array: a jax.Array, a tracer or a
    numpy array (numpy and Python scalars are converted by as_array too, but
    broadcast_parameters leaves them alone)."""
    return isinstance(x, (jax.Array, jax.core.Tracer, np.ndarray))


def as_array(x, what):
    """`x` as a JAX value (see the module doc); ValueError for anything that
    is not an array or a number (e.g. a list: pass jnp.asarray(list))."""
    if isinstance(x, (jax.Array, jax.core.Tracer)):
        return x
    if isinstance(x, _CONVERTIBLE):
        return jnp.asarray(x)
    raise ValueError(f"Horovod JAX ops take jax arrays (or numpy arrays and Python numbers); "
                     f"{what} is a {type(x).__name__}.")


def dtype_code(x, what):
    """The core's dtype code of JAX value `x`; ValueError for dtypes the
    core has no code for (complex, uint32, uint64, float8, ...)."""
    dtype = np.dtype(x.dtype)
    code = DTYPE_CODES.get(dtype)
    if code is None:
        raise ValueError(f"{what} has dtype {dtype}, which Horovod does not support; supported: "
                         f"{_SUPPORTED}. Convert it first (e.g. x.astype(jnp.float32), or "
                         f"complex values as jnp.stack([x.real, x.imag])).")
    return code


def shape_of(x):
    return [int(d) for d in x.shape]


def to_host(x):
    """A C-contiguous host numpy array holding concrete array `x`'s values:
    a zero-copy view for an array on a CPU device, a copy otherwise (see the
    module doc). Blocks until `x` is computed."""
    host = np.asarray(x)
    return host if host.flags.c_contiguous else np.ascontiguousarray(host)


def address(host):
    """The address of a host numpy array's first element (what the core
    reads or writes)."""
    return host.ctypes.data


_ALIGN = 64


def empty_host(shape, dtype):
    """A new 64-byte-aligned host array the core writes a result into
    (aligned so that from_host need not copy it on a CPU device)."""
    shape = tuple(shape)
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + _ALIGN, dtype=np.uint8)
    start = -raw.ctypes.data % _ALIGN
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def _placement(like):
    """Where a result of `like` goes: like's device when `like` is a jax.Array
    committed to exactly one device, else None (JAX's default device,
    uncommitted)."""
    if not isinstance(like, jax.Array) or not like.committed:
        return None
    devices = like.devices()
    return next(iter(devices)) if len(devices) == 1 else None


def from_host(host, like):
    """A new jax.Array holding host numpy array `host`, placed as `like`
    (see the module doc: it may alias `host`); `host` itself when `like`
    is a numpy array (broadcast_parameters keeps numpy leaves numpy)."""
    if isinstance(like, np.ndarray):
        return host
    return jax.device_put(host, _placement(like))


def from_core_output(buf, dtype, like):
    """The result the core allocated (a `_core.OutputBuffer`: bytes and
    shape) as a new jax.Array of `dtype` placed as `like`."""
    host = np.frombuffer(buf, dtype=dtype).reshape(tuple(buf.shape))
    return from_host(host, like)
