"""`horovodrun --check-build`: upstream's report of what this install can do.

Frameworks are probed by importing their horovod_accel adapter; controllers
and tensor operations come from the C++ core (`_core.build_info()`, keys in
docs/design/core_binding.md).
"""
import importlib
import importlib.metadata
import importlib.util
import sys

from horovod_accel.common.install_info import editable, how_to_fix_core

_FRAMEWORKS = [("TensorFlow", "tensorflow"), ("PyTorch", "torch"), ("MXNet", "mxnet"),
               ("JAX", "jax")]


class CoreNotBuilt(RuntimeError):
    pass


def load_build_info():
    """Returns the build info (DEFAULT_RUNTIME.build_info(): the core's plus the
    MPI shims); raises CoreNotBuilt with a how-to-fix message."""
    try:
        from horovod_accel import _core
    except ImportError as e:
        raise CoreNotBuilt(
            f"the horovod_accel C++ extension (horovod_accel._core) is not built or failed to load "
            f"({e}). {how_to_fix_core()}") from None
    from horovod_accel.common.default_runtime import DEFAULT_RUNTIME  # noqa: PLC0415
    return DEFAULT_RUNTIME.build_info()


def horovod_version():
    """The installed horovod_accel version, from the package, its metadata or the core."""
    try:
        import horovod_accel
        v = getattr(horovod_accel, "__version__", None)
        if v:
            return v
    except ImportError:
        pass
    try:
        return importlib.metadata.version("horovod_accel")
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        return load_build_info()["version"]
    except CoreNotBuilt:
        return "unknown (horovod_accel is not installed; run `pip install -e .`)"


def build_description():
    """What this install is, for `horovodrun --version`: how it was
    installed (the wheel's tag, or an editable checkout) and what built its
    core (compiler, commit). Never raises: a part it cannot tell is left out."""
    parts = []
    try:
        dist = importlib.metadata.distribution("horovod_accel")
        tags = [line.split(":", 1)[1].strip() for line in (dist.read_text("WHEEL") or "").splitlines()
                if line.startswith("Tag:")]
        if editable(dist):
            parts.append("editable install")
        elif tags:
            parts.append("wheel " + tags[0])
    except importlib.metadata.PackageNotFoundError:
        parts.append("not installed (source tree)")
    try:
        info = load_build_info()
        core = " ".join(x for x in (info.get("compiler"), info.get("source") and f"from {info['source']}") if x)
        if core:
            parts.append("core built by " + core)
    except (CoreNotBuilt, RuntimeError):
        parts.append("core not loadable")
    return ", ".join(parts)


def framework_status(module):
    """(available, why): available when the framework is installed and
    horovod_accel's adapter for it imports (for TensorFlow that loads the op
    library, horovod_accel/tensorflow/libhvda_tf_ops.so, and connects it to
    the core; for JAX its FFI library must be built as well); why: None when
    available or not installed, else what is wrong."""
    if importlib.util.find_spec(module) is None:
        return False, None
    adapter = f"horovod_accel.{module}"
    try:
        importlib.import_module(adapter)
        if module == "jax":
            # Eager ops work without it, but a JAX user's collectives run inside jax.jit.
            missing = importlib.import_module("horovod_accel.jax.xla_link").missing_library()
            return missing is None, missing
    except Exception as e:  # any failure means the adapter is unusable
        return False, f"{module} is installed but {adapter} failed to import: {e!r}"
    return True, None


def framework_available(module, verbose=False):
    """True if the framework is installed and horovod_accel's adapter for it imports."""
    available, why = framework_status(module)
    if why and verbose:  # part of the --check-build report the caller asked for
        print(why, file=sys.stderr)
    return available


def render(info, frameworks, plugins=(), why=None):
    """The report text. info: build_info() dict; frameworks: {display name:
    bool}; plugins: horovod_accel.common.plugins.probe_all() reports; why:
    {display name: reason} for installed frameworks whose adapter failed."""
    def box(v):
        return "[X]" if v else "[ ]"

    why = why or {}
    ops = [op.lower() for op in info.get("cpu_operations", [])]
    controllers = [c.lower() for c in info.get("controllers", [])]
    lines = [f"Horovod v{info.get('version', horovod_version())}:", "", "Available Frameworks:"]
    for name, _ in _FRAMEWORKS:
        lines.append(f"    {box(frameworks.get(name))} {name}")
        if not frameworks.get(name) and why.get(name):
            lines.append(f"        not available: {why[name]}")
    lines += ["", "Available Controllers:",
              f"    {box('mpi' in controllers)} MPI",
              f"    {box(info.get('gloo_built') and 'gloo' in controllers)} Gloo",
              "", "Available Tensor Operations:",
              f"    {box(info.get('nccl_built'))} NCCL",
              f"    {box(info.get('ddl_built'))} DDL",
              f"    {box(info.get('ccl_built'))} CCL",
              f"    {box('mpi' in ops)} MPI",
              f"    {box('gloo' in ops)} Gloo",
              f"    {box('shm' in ops)} Shared memory (shm)"]
    flavours = info.get("mpi_flavours", [])
    names = {"openmpi": "Open MPI 4/5", "mpich": "MPICH (and its ABI: Intel MPI, MVAPICH)"}
    lines += ["", "Launch under mpirun / mpi4py communicators:"]
    lines += [f"    {box(f in flavours)} {names[f]}" for f in ("openmpi", "mpich")]
    devices = info.get("devices", [])
    if devices:
        lines += ["", "Available Devices:"] + [f"    [X] {d}" for d in devices]
    lines += ["", "Device Plugins (HOROVOD_ACCEL_PLUGINS, entry points 'horovod_accel.plugins'):"]
    if not plugins:
        lines.append("    (none found)")
    for p in plugins:
        if p["name"]:
            head = f"{p['name']} {p['version']} (device '{p['device_type']}', ABI {p['abi']}, {p['path']})"
        else:
            head = p["path"] or "entry point"
        lines.append(f"    {box(p['available'])} {head}")
        if not p["available"]:
            lines.append(f"        not available: {p['why']}")
    return "\n".join(lines)


def check_build(verbose=False):
    """Prints the report; returns the process exit code (1 if the core is not built)."""
    try:
        info = load_build_info()
    except CoreNotBuilt as e:
        print(f"horovodrun --check-build: {e}", file=sys.stderr)
        return 1
    status = {name: framework_status(mod) for name, mod in _FRAMEWORKS}
    frameworks = {name: available for name, (available, _) in status.items()}
    why = {name: reason for name, (_, reason) in status.items() if reason}
    from horovod_accel.common.plugins import probe_all
    print(("\n" if verbose else "") + render(info, frameworks, probe_all(), why))
    return 0
