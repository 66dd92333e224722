"""Checks and defaults of horovod.spark.run / run_elastic's arguments
(upstream's names and defaults). Pure except for reading the environment
variables that supply defaults; raises ValueError/TypeError with the message
a user needs."""
import os
import warnings

DEFAULT_START_TIMEOUT_S = 600


def check_call(caller, fn, args, kwargs):
    if not callable(fn):
        raise TypeError(f"{caller}: fn must be callable, got {type(fn).__name__}")
    if isinstance(args, (str, bytes)) or not hasattr(args, "__iter__"):
        raise TypeError(f"{caller}: args must be a tuple or list, got {type(args).__name__}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError(f"{caller}: kwargs must be a dict, got {type(kwargs).__name__}")


def count(caller, name, value, default):
    """A positive process count (default when value is None)."""
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{caller}: {name} must be a positive integer, got {value!r}")
    return value


def seconds(caller, name, value, env_name, default):
    """A timeout in seconds: value, else $env_name, else default."""
    if value is None:
        text = os.environ.get(env_name)
        if not text:
            return float(default)
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{caller}: {env_name}={text!r} is not a number of seconds") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{caller}: {name} must be a number of seconds >= 0, got {value!r}")
    return float(value)


def start_timeout(caller, value):
    return seconds(caller, "start_timeout", value, "HOROVOD_SPARK_START_TIMEOUT",
                   DEFAULT_START_TIMEOUT_S)


def controller(caller, use_mpi, use_gloo, extra_mpi_args):
    """Spark jobs run on Gloo; use_mpi=True is refused with the reason."""
    if use_mpi:
        raise ValueError(
            f"{caller}: use_mpi=True is not supported on Spark. Each rank runs as a child of "
            "its own Spark task, started by the driver through the job's store; mpirun can only "
            "start ranks itself (over ssh or its own daemons), outside Spark's control of "
            "executors. Upstream's workaround (an rsh agent through Spark tasks) hangs "
            "(horovod#3165). Leave use_mpi unset: ranks talk over Gloo between hosts and shared "
            "memory within one.")
    if use_gloo is False:
        warnings.warn(f"{caller}: use_gloo=False has no effect: Spark jobs always run on Gloo",
                      stacklevel=3)
    if extra_mpi_args:
        warnings.warn(f"{caller}: extra_mpi_args only apply to MPI, which Spark jobs do not use; "
                      "ignoring them", stacklevel=3)


def rank_env(caller, env, nics):
    """The variables every rank gets on top of its executor's environment."""
    out = {}
    for k, v in (env or {}).items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise TypeError(f"{caller}: env must map str to str; {k!r}: {v!r} does not")
        out[k] = v
    if nics:
        out.setdefault("HOROVOD_GLOO_IFACE", nics[0])
    return out


def nic_list(nics):
    """nics as upstream takes them (list, set, or 'a,b') -> list or None."""
    if not nics:
        return None
    if isinstance(nics, str):
        nics = nics.split(",")
    return list(dict.fromkeys(n.strip() for n in nics if n and n.strip())) or None


def elastic_counts(caller, num_proc, min_num_proc, max_num_proc):
    """(num_proc, min, max) with upstream's defaults (min and max = num_proc)."""
    min_num_proc = count(caller, "min_num_proc", min_num_proc, num_proc)
    max_num_proc = count(caller, "max_num_proc", max_num_proc, num_proc)
    if not min_num_proc <= num_proc <= max_num_proc:
        raise ValueError(f"{caller}: expected min_num_proc <= num_proc <= max_num_proc, got "
                         f"{min_num_proc}, {num_proc}, {max_num_proc}")
    return num_proc, min_num_proc, max_num_proc


def reset_limit(caller, value):
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ValueError(f"{caller}: reset_limit must be an integer >= 0, got {value!r}")
    return value
