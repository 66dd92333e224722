"""Framework-independent parts of the Python API (upstream `horovod.common`):
basics.py (init, topology, build flags), basic_names.py (those as upstream's
module-level names, re-exported by every adapter's mpi_ops), process_sets.py,
exceptions.py, util.py, and default_runtime.py (the process's one
`_core.Runtime`). Nothing here imports the launcher (horovod_accel/runner/);
the rendezvous store it needs is horovod_accel/rendezvous/."""
