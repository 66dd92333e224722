"""Framework-independent parts of the Python API (upstream `horovod.common`):
basics.py (init, topology, build flags), process_sets.py, exceptions.py,
util.py, and default_runtime.py (the process's one `_core.Runtime`)."""
