"""Test-only torch device (PrivateUse1) over an emulated CUDA-like runtime.

Two flavours, chosen by HVDA_TEST_DEVICE_RUNTIME when torch is imported:

  tops (default)  device 'gcu' over the TOPS runtime named by
                  HOROVOD_GCU_RUNTIME_LIB (tops* symbols), as torch_gcu shows a GCU;
  cuda            device 'emucuda' over the CUDA runtime named by
                  HOROVOD_CUDA_RUNTIME_LIB (cuda* symbols); PrivateUse1 cannot be
                  named 'cuda', so horovod_accel's CUDA plugin is pointed at it
                  with HOROVOD_CUDA_DEVICE_TYPE=emucuda (scripts/emulated_cuda.sh).

torch calls `_autoload` (entry point group `torch.backends`, see
../hvda_test_gcu-0.0.0.dist-info/entry_points.txt) while `import torch` runs,
when this directory is on sys.path (tests/emulated/torch_gcu/env.sh puts it
there) and TORCH_DEVICE_BACKEND_AUTOLOAD is not 0. It loads the native
extension (compiled once, see _build.py), dlopen()s the flavour's runtime,
renames PrivateUse1 to the flavour's device name and registers the device
module (gcu.py) as `torch.<name>`.

Runtime variable unset: the device is still registered (so a job whose
environment dropped HOROVOD_* still imports torch) but has no devices, and
using it raises an error that names the variable. Set but not loadable, or an
unknown flavour: the import fails with the reason.
"""
import os

__all__ = ["install", "FLAVOURS", "flavour"]

# flavour -> (torch device name, variable naming the runtime library, runtime)
FLAVOURS = {
    "tops": ("gcu", "HOROVOD_GCU_RUNTIME_LIB", "TOPS"),
    "cuda": ("emucuda", "HOROVOD_CUDA_RUNTIME_LIB", "CUDA"),
}
RUNTIME_VAR = "HVDA_TEST_DEVICE_RUNTIME"

_installed = False


def flavour():
    """The flavour HVDA_TEST_DEVICE_RUNTIME selects ('tops' when unset or empty)."""
    name = os.environ.get(RUNTIME_VAR) or "tops"
    if name not in FLAVOURS:
        raise RuntimeError(f"hvda_test_gcu: {RUNTIME_VAR}={name!r} is not a known runtime flavour; "
                           f"use one of {sorted(FLAVOURS)} (or leave it unset for 'tops')")
    return name


def install():
    """Registers the flavour's device with torch (idempotent)."""
    global _installed
    if _installed:
        return
    import torch

    from . import _build, gcu

    flav = flavour()
    name, var, runtime = FLAVOURS[flav]
    lib = os.environ.get(var, "")
    path = None
    if lib:
        path = os.path.abspath(lib)
        if not os.path.isfile(path):
            raise RuntimeError(
                f"hvda_test_gcu: {var}={lib} does not exist; build the emulated {runtime} runtime "
                f"first (cmake -S tests/emulated -B build/emulated && "
                f"cmake --build build/emulated -j2)")
    ext = _build.load_extension()
    ext._init_runtime(flav, name, path)
    gcu._C = ext
    gcu._name = name
    gcu._runtime_var = var
    gcu._runtime = runtime
    gcu._runtime_lib = path

    if torch._C._get_privateuse1_backend_name() != name:
        torch.utils.rename_privateuse1_backend(name)
    if not hasattr(torch.Tensor, f"is_{name}"):
        torch.utils.generate_methods_for_privateuse1_backend(
            for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True)
    if getattr(torch, name, None) is not gcu:
        torch._register_device_module(name, gcu)
    _installed = True


def _autoload():
    """Entry point of group `torch.backends`."""
    install()
