"""Helpers shared by the adapters (upstream `horovod.common.util`).

Build probes (`mpi_built()`, `extension_available()`, ...) read
`_core.build_info()`: horovod_accel has one framework-neutral core, so there is
no per-framework extension to probe in a subprocess.
"""
import importlib.util
import os
import sysconfig
import warnings
from contextlib import contextmanager

from horovod_accel.common.default_runtime import DEFAULT_RUNTIME

# The frameworks upstream builds an extension for (kept for code that reads it).
EXTENSIONS = ['tensorflow', 'torch', 'mxnet']


def get_ext_suffix():
    """The file suffix of a Python extension module of this interpreter
    (e.g. '.cpython-311-x86_64-linux-gnu.so')."""
    return sysconfig.get_config_var('EXT_SUFFIX') or sysconfig.get_config_var('SO') or '.so'


def get_extension_full_path(pkg_path, *args):
    """Upstream's path of an extension: `dirname(pkg_path)/args[:-1]/args[-1]<suffix>`."""
    assert len(args) >= 1
    dir_path = os.path.join(os.path.dirname(pkg_path), *args[:-1])
    return os.path.join(dir_path, args[-1] + get_ext_suffix())


def _cache(f):
    """Memoises f on its (hashable) arguments, as upstream's helper."""
    cache = {}

    def wrapper(*args, **kwargs):
        key = (args, frozenset(kwargs.items()))
        if key in cache:
            return cache[key]
        retval = f(*args, **kwargs)
        cache[key] = retval
        return retval

    return wrapper


@_cache
def is_version_greater_equal_than(ver, target):
    """True if version string `ver` >= `target` ('major.minor.patch'); ValueError
    for non-string arguments or a target not of that form (upstream's contract)."""
    from packaging import version
    if any(not isinstance(s, str) for s in (ver, target)):
        raise ValueError(f"This function only accepts string arguments. \nReceived:\n"
                         f"\t- ver (type {type(ver)}: {ver})"
                         f"\t- target (type {type(target)}: {target})")
    if len(target.split(".")) != 3:
        raise ValueError(f"We only accepts target version values in the form of: "
                         f"major.minor.patch. Received: {target}")
    return version.parse(ver) >= version.parse(target)


def is_iterable(x):
    try:
        iter(x)
    except TypeError:
        return False
    return True


def split_list(l, n):
    """Splits l into n consecutive parts whose lengths differ by at most one
    (the first len(l) % n parts are one longer)."""
    d, r = divmod(len(l), n)
    return [l[i * d + min(i, r):(i + 1) * d + min(i + 1, r)] for i in range(n)]


def num_rank_is_power_2(num_rank):
    """True if num_rank is a positive power of two (Adasum's requirement)."""
    return num_rank != 0 and (num_rank & (num_rank - 1)) == 0


def check_num_rank_power_of_2(num_rank):
    """Upstream helper for Adasum: ValueError unless num_rank is a power of 2."""
    if not num_rank_is_power_2(num_rank):
        raise ValueError("Adasum reduction can only be used with a number of ranks that is a "
                         f"power of 2, got {num_rank}.")


def get_average_backwards_compatibility_fun(reduce_ops):
    """Returns impl(op, average) -> op, resolving the deprecated `average` flag.

    reduce_ops: anything with `.Average` and `.Sum` (e.g. the basics object).
    op given -> op (ValueError if average is given too); average True/False ->
    Average/Sum with a DeprecationWarning; neither -> Average.
    """

    def impl(op, average):
        if op is not None:
            if average is not None:
                raise ValueError("The op parameter supersedes average. Please provide only one of them.")
            return op
        if average is not None:
            warnings.warn("Parameter `average` has been replaced with `op` and will be removed in v1.0",
                          DeprecationWarning)
            return reduce_ops.Average if average else reduce_ops.Sum
        return reduce_ops.Average

    return impl


@contextmanager
def env(**kwargs):
    """Temporarily sets environment variables (None values are ignored);
    restores (or removes) them on exit."""
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    backup = {k: os.environ.get(k) for k in kwargs}
    os.environ.update({k: str(v) for k, v in kwargs.items()})
    try:
        yield
    finally:
        for k, v in backup.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _core_available():
    try:
        DEFAULT_RUNTIME.core()
        return True
    except ImportError:
        return False


def check_extension(ext_name, ext_env_var, pkg_path, *args):
    """Raises ImportError if `ext_name` (e.g. 'horovod.torch') cannot work: the
    core extension does not load. ext_env_var/pkg_path/args are accepted for
    upstream compatibility (there is no per-framework library to locate)."""
    try:
        DEFAULT_RUNTIME.core()
    except ImportError as e:
        raise ImportError(f"Extension {ext_name} has not been built: {e}") from e


def extension_available(ext_base_name, verbose=False):
    """True if the framework `ext_base_name` ('torch', 'tensorflow', ...) is
    installed and the core loads."""
    if importlib.util.find_spec(ext_base_name) is None:
        return False
    ok = _core_available()
    if not ok and verbose:
        print(f"horovod_accel core failed to load; {ext_base_name} support is unavailable")
    return ok


def gpu_available(ext_base_name, verbose=False):
    """True if the core has a GPU device built and the framework sees a GPU."""
    if not extension_available(ext_base_name, verbose):
        return False
    if not (cuda_built() or rocm_built()):
        return False
    if ext_base_name == "torch":
        import torch
        return torch.cuda.is_available()
    return False


def _built(key, verbose):
    try:
        return DEFAULT_RUNTIME.build_info()[key]
    except ImportError as e:
        if verbose:
            print(e)
        return False


def mpi_built(verbose=False):
    return bool(_built("mpi_built", verbose))


def gloo_built(verbose=False):
    return bool(_built("gloo_built", verbose))


def nccl_built(verbose=False):
    return int(_built("nccl_built", verbose))


def ddl_built(verbose=False):
    return bool(_built("ddl_built", verbose))


def ccl_built(verbose=False):
    return bool(_built("ccl_built", verbose))


def cuda_built(verbose=False):
    return bool(_built("cuda_built", verbose))


def rocm_built(verbose=False):
    return bool(_built("rocm_built", verbose))


def check_installed_version(name, version, exception=None):
    """Upstream raises HorovodVersionMismatchError when `name` now has a
    different version than at build time. horovod_accel's core is never
    compiled against a framework, so every installed version is compatible:
    this never raises (and re-raises nothing from `exception`)."""
    return None
