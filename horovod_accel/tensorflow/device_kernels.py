"""Horovod's TensorFlow kernels on PluggableDevices (docs/design/tensorflow.md,
"Accelerators").

A vendor's TensorFlow plugin (a PluggableDevice library, loaded from TF's
`tensorflow-plugins` folder or with `tf.load_pluggable_device_library`) adds
a device type such as "GCU". When a horovod_accel device plugin serves the
same type (its device_type is TF's type lower-cased), the op library's
collective kernels are registered for that type too: a Horovod op on a
tensor on that device then runs there, on TF's stream, through the device
plugin, without a host copy. A pluggable type no horovod plugin serves keeps
the CPU kernels: TensorFlow copies the tensor to the host and back around
each Horovod op, as before.

The built-in "GPU" type is not a PluggableDevice (TF's C API gives its kernels
no stream), so it keeps the CPU kernels too.

mpi_ops.py holds one `DeviceKernels` for its op library and calls `ensure()`
when a Horovod op is built or run (not at import: listing TensorFlow's
devices initializes them, after which `tf.load_pluggable_device_library`
could no longer add any; users load plugins before their first Horovod op).
"""
import ctypes
import logging
import threading

import tensorflow as tf

from horovod_accel.common import plugins, settings
from horovod_accel.common.log import get_logger

# Device types TensorFlow itself provides (not PluggableDevices).
_BUILT_IN = frozenset({"CPU", "GPU", "TPU", "TPU_SYSTEM", "XLA_CPU", "XLA_GPU"})


def pluggable_device_types():
    """The device types of TensorFlow's physical devices that come from
    PluggableDevice plugins, sorted."""
    return sorted({d.device_type for d in tf.config.list_physical_devices()} - _BUILT_IN)


def _served_device_types():
    """{device type: plugin name} of the horovod_accel device plugins usable here."""
    return {r["device_type"]: r["name"] for r in plugins.probe_all()
            if r.get("available") and r.get("device_type")}


def register(path):
    """Registers the collective kernels of the op library at `path` for every
    PluggableDevice type a horovod_accel plugin serves. Returns
    {TF device type: "registered" or why not}."""
    types = pluggable_device_types()
    if not types:
        return {}
    log = get_logger(__name__)
    # Said once per job, by rank 0 (every rank decides the same).
    info = logging.INFO if settings.read("HOROVOD_RANK") == 0 else logging.DEBUG
    lib = ctypes.CDLL(path)
    outcome = {}
    if not lib.hvda_tf_device_kernels_available():
        why = ("this TensorFlow's kernel C API lacks TF_GetDeviceName/TF_GetDeviceId, so "
               "Horovod ops on these devices go through the host")
        for t in types:
            outcome[t] = why
        log.log(info, "TensorFlow devices %s: %s", ", ".join(types), why)
        return outcome
    served = _served_device_types()
    lib.hvda_tf_register_device_kernels.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                                                    ctypes.c_size_t]
    lib.hvda_tf_register_device_kernels.restype = ctypes.c_int
    for t in types:
        if t.lower() not in served:
            outcome[t] = (f"no horovod_accel device plugin serves '{t.lower()}' here (see "
                          f"`horovodrun --check-build`): Horovod ops on {t} tensors run on the "
                          f"CPU, and TensorFlow copies their tensors to the host and back")
            log.log(info, "TensorFlow device %s: %s", t, outcome[t])
            continue
        message = ctypes.create_string_buffer(1024)
        if lib.hvda_tf_register_device_kernels(t.encode(), message, len(message)) != 0:
            raise RuntimeError(f"horovod_accel: {message.value.decode(errors='replace')}")
        outcome[t] = "registered"
        log.debug("TensorFlow device %s: Horovod kernels run on it through the %s plugin",
                  t, served[t.lower()])
    return outcome


class DeviceKernels:
    """Registers the op library's device kernels once (`register`), the first
    time `ensure()` is called. Thread-safe."""

    def __init__(self, path):
        self._path = path
        self._lock = threading.Lock()
        self.outcome = None  # {TF device type: "registered" or why not}, once done

    def ensure(self):
        if self.outcome is not None:
            return
        with self._lock:
            if self.outcome is not None:
                return
            try:
                self.outcome = register(self._path)
            except Exception as e:
                # Once: a second attempt could register some kernels twice.
                self.outcome = {"error": str(e)}
                raise
