"""Test-only torch device 'gcu' (PrivateUse1) over the emulated TOPS runtime.

torch calls `_autoload` (entry point group `torch.backends`, see
../hvda_test_gcu-0.0.0.dist-info/entry_points.txt) while `import torch` runs,
when this directory is on sys.path (tests/emulated/torch_gcu/env.sh puts it
there) and TORCH_DEVICE_BACKEND_AUTOLOAD is not 0. It loads the native
extension (compiled once, see _build.py), dlopen()s the runtime named by
HOROVOD_GCU_RUNTIME_LIB, renames PrivateUse1 to 'gcu' and registers the
device module as `torch.gcu`.

HOROVOD_GCU_RUNTIME_LIB unset: the device is still registered (so a job whose
environment dropped HOROVOD_* still imports torch) but has no devices, and
using it raises an error that names the variable. Set but not loadable: the
import fails with the reason.
"""
import os

__all__ = ["install"]

_installed = False


def install():
    """Registers the 'gcu' device with torch (idempotent)."""
    global _installed
    if _installed:
        return
    import torch

    from . import _build, gcu

    lib = os.environ.get("HOROVOD_GCU_RUNTIME_LIB", "")
    if lib:
        path = os.path.abspath(lib)
        if not os.path.isfile(path):
            raise RuntimeError(
                f"hvda_test_gcu: HOROVOD_GCU_RUNTIME_LIB={lib} does not exist; build the emulated "
                f"runtime first (cmake -S tests/emulated -B build/emulated && "
                f"cmake --build build/emulated -j2)")
    ext = _build.load_extension()
    if lib:
        ext._init_runtime(path)
    gcu._C = ext
    gcu._runtime_lib = path if lib else None

    if torch._C._get_privateuse1_backend_name() != "gcu":
        torch.utils.rename_privateuse1_backend("gcu")
    if not hasattr(torch.Tensor, "is_gcu"):
        torch.utils.generate_methods_for_privateuse1_backend(
            for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True)
    if getattr(torch, "gcu", None) is not gcu:
        torch._register_device_module("gcu", gcu)
    _installed = True


def _autoload():
    """Entry point of group `torch.backends`."""
    install()
