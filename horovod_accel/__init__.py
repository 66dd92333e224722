"""horovod_accel: a drop-in, upstream-compatible Horovod whose C++ core is
framework-neutral (see /docs/design/core_binding.md).

Importing this package is cheap and never loads the C++ extension; the core
(`horovod_accel._core`) is loaded on first use (`hvd.init()`, `*_built()`).
Users normally import a framework adapter, e.g. `import horovod.torch as hvd`
(the `horovod` package is an alias of this one). `horovod_accel.run` is
upstream's `horovod.run` (runner/run_api.py).
"""
import os as _os

__version__ = "0.1.0"


def get_include():
    """The folder holding the public C headers, `horovod_accel/plugin.h` (the
    device plugin ABI) and `horovod_accel/core_api.h`: a plugin's build adds
    it to its include path (docs/vendor_guide.md). An installed wheel carries
    them in the package; a source checkout has them in csrc/include."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    installed = _os.path.join(here, "include")
    if _os.path.isfile(_os.path.join(installed, "horovod_accel", "plugin.h")):
        return installed
    return _os.path.join(_os.path.dirname(here), "csrc", "include")


def __getattr__(name):
    # `horovod_accel.run` (upstream's `horovod.run`), imported on first use.
    if name == "run":
        from horovod_accel.runner import run  # noqa: PLC0415
        globals()["run"] = run
        return run
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
