"""Finding device plugins (docs/design/plugins.md).

A device plugin is a shared library implementing the C ABI in
csrc/include/horovod_accel/plugin.h. Plugins are found from:

1. HOROVOD_ACCEL_PLUGINS: comma-separated names or paths; a name `x` is
   libhorovod_accel_x.so, looked up in this package's `plugins/` folder,
   else wherever the dynamic linker looks (LD_LIBRARY_PATH, ...);
2. the entry-point group `horovod_accel.plugins`: a plugin wheel declares
   e.g. `gcu = horovod_accel_gcu:library_path`, an attribute that is the
   library's path or a callable returning it.

`probe_all()` loads, validates and probes each (then unloads it) and says
whether it can work here and, if not, why; `horovodrun --check-build`
prints that.
"""
import importlib.metadata
import os

from horovod_accel.common import settings
from horovod_accel.common.default_runtime import DEFAULT_RUNTIME

ENTRY_POINT_GROUP = "horovod_accel.plugins"
PLUGINS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "plugins")


def _entry_point_paths():
    """[(entry point name, path or None, error or None)] for the group."""
    out = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            target = ep.load()
            path = target() if callable(target) else target
            if not isinstance(path, (str, os.PathLike)):
                raise TypeError(f"it gave {type(path).__name__}, not a path")
            out.append((ep.name, os.fspath(path), None))
        except Exception as e:  # a broken plugin package must not break the core
            out.append((ep.name, None, f"entry point '{ep.name} = {ep.value}' of group "
                                       f"{ENTRY_POINT_GROUP} failed: {e}"))
    return out


def plugin_paths():
    """The library paths of every plugin named in HOROVOD_ACCEL_PLUGINS or
    declared through entry points, in that order, without duplicates; plus
    the errors of entry points that did not load."""
    core = DEFAULT_RUNTIME.core()
    paths = list(core.resolve_plugin_specs(settings.read("HOROVOD_ACCEL_PLUGINS"), [PLUGINS_DIR]))
    errors = []
    for _, path, error in _entry_point_paths():
        if error:
            errors.append(error)
        elif path not in paths:
            paths.append(path)
    return paths, errors


def probe_all():
    """[{path, name, version, device_type, abi, available, why}] of every
    plugin found (entry points that failed to load appear with their error)."""
    core = DEFAULT_RUNTIME.core()
    paths, errors = plugin_paths()
    reports = [dict(core.probe_plugin(p)) for p in paths]
    reports += [{"path": "", "name": "", "version": "", "device_type": "", "abi": "",
                 "available": False, "why": e} for e in errors]
    return reports
