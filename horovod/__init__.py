"""`horovod`: upstream's package name, an alias of `horovod_accel`.

`import horovod.X.Y` imports `horovod_accel.X.Y` and registers the *same*
module object under both names (sys.modules), so state (the runtime, pending
handles, process sets) is shared and `horovod.torch is horovod_accel.torch`.
This covers every submodule (horovod.torch, horovod.torch.mpi_ops,
horovod.common.exceptions, horovod.runner, ...) without a file per module;
`python -m horovod.runner.launch` works too. `horovod.run` is upstream's
programmatic launcher (horovod_accel/runner/run_api.py), imported on first use.

A few upstream modules have a different name here, one that says what the
module holds (RENAMED_MODULES); their upstream names import the same module
object, and `import horovod.ray` also makes `horovod.ray.runner` an
attribute, as upstream's package does.
"""
import importlib
import importlib.abc
import importlib.util
import sys

import horovod_accel as _accel

# Upstream release whose API this package implements.
__version__ = "0.28.1"
horovod_accel_version = _accel.__version__

_ALIAS = __name__            # "horovod"
_TARGET = "horovod_accel"

# Upstream module name -> the module that holds it here.
RENAMED_MODULES = {
    "horovod.spark.runner": "horovod_accel.spark.run_api",   # horovod.spark.run, run_elastic
    "horovod.ray.runner": "horovod_accel.ray.executor",      # RayExecutor, Coordinator, ...
}


class _AliasLoader(importlib.abc.Loader):
    """Loads the alias module `alias` by importing its real module `target`."""

    def __init__(self, alias, target):
        self.alias = alias
        self.target = target
        self._real_spec = None

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self._real_spec = module.__spec__
        return module

    def exec_module(self, module):
        # The import system has just set module.__spec__ to the alias spec;
        # restore the real one so reload() and pickling see horovod_accel's names.
        if self._real_spec is not None:
            module.__spec__ = self._real_spec
        _register_renamed_children(self.alias, module)

    # runpy (`python -m horovod.runner.launch`) asks the loader for the code.
    def _target_loader(self):
        spec = importlib.util.find_spec(self.target)
        if spec is None or spec.loader is None:
            raise ImportError(f"No module named {self.target!r}")
        return spec.loader

    def get_code(self, fullname):
        return self._target_loader().get_code(self.target)

    def is_package(self, fullname):
        return self._target_loader().is_package(self.target)

    def get_source(self, fullname):
        return self._target_loader().get_source(self.target)


def _register_renamed_children(alias, package):
    """Makes each renamed child of the alias package `alias` whose module is
    already imported (horovod_accel.ray imports its executor) an attribute of
    the package and a sys.modules entry, as a child import would. Children
    imported lazily (horovod.spark's run_api) appear when imported."""
    for child, target in RENAMED_MODULES.items():
        parent, _, leaf = child.rpartition(".")
        if parent == alias and target in sys.modules:
            sys.modules.setdefault(child, sys.modules[target])
            setattr(package, leaf, sys.modules[target])


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Maps every `horovod.<rest>` import to `horovod_accel.<rest>`."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(_ALIAS + "."):
            return None
        real = RENAMED_MODULES.get(fullname, _TARGET + fullname[len(_ALIAS):])
        real_spec = importlib.util.find_spec(real)
        if real_spec is None:
            return None
        return importlib.util.spec_from_loader(
            fullname, _AliasLoader(fullname, real),
            is_package=real_spec.submodule_search_locations is not None)


if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _AliasFinder())


def __getattr__(name):
    # `horovod.run(func, ...)`: imported on first use so `import horovod` stays cheap.
    if name == "run":
        from horovod_accel.runner import run  # noqa: PLC0415
        globals()["run"] = run
        return run
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
