"""horovod_accel: a drop-in, upstream-compatible Horovod whose C++ core is
framework-neutral (see /docs/design/core_binding.md).

Importing this package is cheap and never loads the C++ extension; the core
(`horovod_accel._core`) is loaded on first use (`hvd.init()`, `*_built()`).
Users normally import a framework adapter, e.g. `import horovod.torch as hvd`
(the `horovod` package is an alias of this one).
"""
__version__ = "0.1.0"
