"""Loads the JAX FFI library (libhvda_jax.so, csrc/jax/), registers its
handler with XLA as the custom-call target `hvda_collective`, and connects it
to the process's core runtime (its C API table, core_api.h).

`ensure_ready()` runs when a collective is traced (not per execution). The
registration and the connection are process-wide facts of XLA's and the
library's own, done once: the core C API table and the default Runtime live
until the process exits (common/default_runtime.py keeps one Runtime across
init() and shutdown()).
"""
import ctypes
import os
import threading

from horovod_accel.common.default_runtime import DEFAULT_RUNTIME
from horovod_accel.jax.xla_lowering import TARGET

_LIB_FILE = "libhvda_jax.so"
_BUILD_HINT = ("It is built when jaxlib is installed at build time (its XLA FFI headers): install "
               "jaxlib, then reinstall horovod_accel (from a source tree: `pip install -e .`, or "
               "`cmake --build <build dir> --target hvda_jax`).")


def _library_path():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), _LIB_FILE)


def missing_library():
    """Why collectives cannot run inside jax.jit in this install (the FFI
    library is not built), or None. Does not load anything."""
    path = _library_path()
    if os.path.exists(path):
        return None
    return f"horovod_accel's JAX library ({path}) is not built. {_BUILD_HINT}"


class _Link:
    """The loaded library, once registered and connected."""

    def __init__(self):
        self._lock = threading.Lock()
        self._lib = None

    def ensure_ready(self):
        if self._lib is not None:
            return
        with self._lock:
            if self._lib is None:
                self._lib = _load_and_connect()


def _load_and_connect():
    import jax  # noqa: PLC0415

    missing = missing_library()
    if missing is not None:
        raise RuntimeError(f"Horovod's collectives cannot run inside jax.jit: {missing}")
    path = _library_path()
    lib = ctypes.CDLL(path)
    setter = lib.hvda_jax_set_core_api
    setter.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
    setter.restype = ctypes.c_int
    table, runtime = DEFAULT_RUNTIME.runtime().c_api()
    if setter(table, runtime) != 0:
        raise RuntimeError(f"{path} does not match this horovod_accel core (it needs core C API "
                           f"1.1 or later). {_BUILD_HINT}")
    jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(lib.hvda_jax_collective_cpu),
                                platform="cpu")
    if _has_backend(jax, "cuda"):
        # Device buffers on XLA's stream, served by the CUDA device plugin.
        jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(lib.hvda_jax_collective_cuda),
                                    platform="CUDA")
    return lib


def _has_backend(jax, platform):
    try:
        return bool(jax.devices(platform))
    except RuntimeError:  # no such backend in this jaxlib, or no device
        return False


LINK = _Link()
