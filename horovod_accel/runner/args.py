"""horovodrun's command line: upstream Horovod's flags, names and defaults.

parse_args(argv) returns an argparse.Namespace whose dest names match
upstream's (horovod/runner/launch.py), so tunables.py maps them to HOROVOD_*
like upstream does. Flags for features this build lacks (jsrun,
--config-file) are accepted by the parser and then rejected by validate()
with a message saying so, instead of being silently ignored. Elastic mode
(--min-np or --host-discovery-script) is checked by elastic/settings.py.
"""
import argparse
import sys

from horovod_accel.runner.elastic import settings as elastic_settings

LOG_LEVELS = ["TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "FATAL"]



class _VersionAction(argparse.Action):
    """-v/--version: prints the version and what the build is (computed
    lazily: wheel tag or editable, compiler, commit) and exits 0."""

    def __init__(self, option_strings, dest, help=None):
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from horovod_accel.runner.check_build import build_description, horovod_version
        print(f"{horovod_version()} ({build_description()})")
        parser.exit(0)


class _NicAction(argparse.Action):
    """--network-interfaces a,b (and deprecated repeated --network-interface)."""

    def __init__(self, option_strings, dest, help=None):
        super().__init__(option_strings, dest=dest, nargs=1, default=None, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        nics = list(getattr(namespace, self.dest) or [])
        nics += [n for n in values[0].split(",") if n and n not in nics]
        setattr(namespace, self.dest, nics)


def _threads_per_rank(text):
    from horovod_accel.common.compute_threads import parse_setting  # noqa: PLC0415
    try:
        parse_setting({"HOROVOD_THREADS_PER_RANK": text})
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not 'auto', 'off' or a positive "
                                         f"count") from None
    return text


def _bool_pair(group, on, off, dest, help_on, hide_on=False, hide_off=True):
    g = group.add_mutually_exclusive_group()
    g.add_argument(on, dest=dest, action="store_const", const=True, default=None,
                   help=argparse.SUPPRESS if hide_on else help_on)
    g.add_argument(off, dest=dest, action="store_const", const=False,
                   help=argparse.SUPPRESS if hide_off else f"Explicitly disable {on}.")


def build_parser():
    p = argparse.ArgumentParser(prog="horovodrun", description="Horovod Runner (horovod_accel)")
    p.add_argument("-v", "--version", action=_VersionAction, help="Shows Horovod version.")
    p.add_argument("-np", "--num-proc", dest="num_proc", type=int,
                   help="Total number of training processes.")
    p.add_argument("-cb", "--check-build", dest="check_build", action="store_true",
                   help="Shows which frameworks and libraries have been built into Horovod.")
    p.add_argument("--disable-cache", dest="disable_cache", action="store_true",
                   help="Accepted for compatibility: upstream caches its ssh checks for 60 "
                        "minutes; horovodrun here caches nothing.")
    p.add_argument("--start-timeout", dest="start_timeout", type=int,
                   help="Seconds the ranks wait for each other at hvd.init() (exported as "
                        "HOROVOD_START_TIMEOUT; default: $HOROVOD_START_TIMEOUT or 30).")
    p.add_argument("--network-interfaces", "--network-interface", dest="nics", action=_NicAction,
                   help='Network interfaces for communication, e.g. "eth0,eth1".')
    p.add_argument("--output-filename", dest="output_filename",
                   help="Also write each rank's output to <DIR>/rank.<rank>/{stdout,stderr} "
                        "(rank zero-padded).")
    p.add_argument("--verbose", dest="verbose", action="store_true",
                   help="Print extra messages (store address, per-rank commands).")
    p.add_argument("--config-file", dest="config_file", help="Not supported yet.")
    p.add_argument("command", nargs=argparse.REMAINDER, help="Command to be executed.")

    g = p.add_argument_group("SSH arguments")
    g.add_argument("-p", "--ssh-port", dest="ssh_port", type=int, help="SSH port on all the hosts.")
    g.add_argument("-i", "--ssh-identity-file", dest="ssh_identity_file",
                   help="File from which the ssh identity (private key) is read.")

    g = p.add_argument_group("tuneable parameter arguments")
    g.add_argument("--fusion-threshold-mb", type=int, help="Fusion buffer threshold in MB (default: 128).")
    g.add_argument("--cycle-time-ms", type=float, help="Cycle time in ms (default: 1).")
    g.add_argument("--cache-capacity", type=int, help="Response cache capacity (default: 1024).")
    _bool_pair(g, "--hierarchical-allreduce", "--no-hierarchical-allreduce", "hierarchical_allreduce",
               "Hierarchical allreduce (accepted; CPU backends ignore it).", hide_off=False)
    _bool_pair(g, "--hierarchical-allgather", "--no-hierarchical-allgather", "hierarchical_allgather",
               "Hierarchical allgather (accepted; CPU backends ignore it).", hide_off=False)
    _bool_pair(g, "--torus-allreduce", "--no-torus-allreduce", "torus_allreduce",
               "2D torus allreduce (accepted; CPU backends ignore it).", hide_off=False)

    g = p.add_argument_group("autotune arguments")
    _bool_pair(g, "--autotune", "--no-autotune", "autotune", "Autotune fusion threshold and cycle time.")
    g.add_argument("--autotune-log-file", help="CSV log of autotuning trials.")
    g.add_argument("--autotune-warmup-samples", type=int, help="(default: 3)")
    g.add_argument("--autotune-steps-per-sample", type=int, help="(default: 10)")
    g.add_argument("--autotune-bayes-opt-max-samples", type=int, help="(default: 20)")
    g.add_argument("--autotune-gaussian-process-noise", type=float, help="In [0, 1] (default: 0.8)")

    g = p.add_argument_group("elastic arguments (on with --min-np or --host-discovery-script)")
    g.add_argument("--min-np", "--min-num-proc", dest="min_num_proc", type=int,
                   help="Fewest processes the job may run with (default: -np).")
    g.add_argument("--max-np", "--max-num-proc", dest="max_num_proc", type=int,
                   help="Most processes the job may grow to (default: no limit).")
    g.add_argument("--slots-per-host", dest="slots", type=int,
                   help="Slots of a discovered host printed without ':<slots>'.")
    g.add_argument("--elastic-timeout", dest="elastic_timeout", type=int,
                   help="Seconds to wait for --min-np slots (default: HOROVOD_ELASTIC_TIMEOUT "
                        "or 600).")
    g.add_argument("--reset-limit", dest="reset_limit", type=int,
                   help="Most resets the job may do (default: no limit).")
    g.add_argument("--blacklist-cooldown-range", dest="cooldown_range", type=int, nargs=2,
                   metavar=("MIN", "MAX"),
                   help="A failed host returns after a cooldown between MIN and MAX seconds "
                        "(default: never).")

    g = p.add_argument_group("timeline arguments")
    g.add_argument("--timeline-filename", help="Chrome-trace timeline written by rank 0.")
    _bool_pair(g, "--timeline-mark-cycles", "--no-timeline-mark-cycles", "timeline_mark_cycles",
               "Mark cycles on the timeline.")

    g = p.add_argument_group("stall check arguments")
    _bool_pair(g, "--no-stall-check", "--stall-check", "no_stall_check", "Disable the stall check.")
    g.add_argument("--stall-check-warning-time-seconds", type=int, help="(default: 60)")
    g.add_argument("--stall-check-shutdown-time-seconds", type=int, help="(default: 0)")

    g = p.add_argument_group("library arguments")
    _bool_pair(g, "--mpi-threads-disable", "--no-mpi-threads-disable", "mpi_threads_disable",
               "Disable MPI threading support (MPI only).")
    g.add_argument("--mpi-args", dest="mpi_args", help="Extra mpirun arguments (MPI only).")
    g.add_argument("--tcp", dest="tcp_flag", action="store_true", help="Use TCP only (NCCL_IB_DISABLE=1).")
    g.add_argument("--binding-args", dest="binding_args", help="Process binding arguments (MPI only).")
    g.add_argument("--num-nccl-streams", type=int, help="Number of NCCL streams.")
    g.add_argument("--thread-affinity", help="Core(s) for the background thread, comma list "
                                             "indexed by local rank (HOROVOD_THREAD_AFFINITY).")
    g.add_argument("--gloo-timeout-seconds", type=int, help="Gloo operation timeout (default: 30).")
    g.add_argument("--threads-per-rank", dest="threads_per_rank", type=_threads_per_rank,
                   help="Compute threads of each rank's frameworks (OMP_NUM_THREADS, torch, "
                        "TensorFlow, MKL, OpenBLAS): 'auto' (default: the rank's share of its "
                        "host's CPUs), a count, or 'off' (the frameworks' defaults). Variables "
                        "set by the user win (HOROVOD_THREADS_PER_RANK).")

    g = p.add_argument_group("logging arguments")
    g.add_argument("--log-level", choices=LOG_LEVELS, help="Minimum core log level (default: WARNING).")
    lg = g.add_mutually_exclusive_group()
    lg.add_argument("--log-with-timestamp", dest="log_with_timestamp", action="store_const",
                    const=True, default=None, help=argparse.SUPPRESS)
    lg.add_argument("--log-without-timestamp", "--log-hide-timestamp", dest="log_with_timestamp",
                    action="store_const", const=False, help="Hide timestamps in core log messages.")
    lg.add_argument("-prefix-timestamp", "--prefix-output-with-timestamp",
                    dest="prefix_output_with_timestamp", action="store_true",
                    help="Timestamp each forwarded line of output.")

    g = p.add_argument_group("host arguments").add_mutually_exclusive_group()
    g.add_argument("-H", "--hosts", dest="hosts", help="Hosts and slots, e.g. host1:2,host2:4 "
                                                       "(default: localhost:<np>).")
    g.add_argument("-hostfile", "--hostfile", dest="hostfile",
                   help="File with one '<hostname> slots=<N>' per line.")
    g.add_argument("--host-discovery-script", dest="host_discovery_script",
                   help="Elastic mode: a script printing the available hosts, one "
                        "'<hostname>[:<slots>]' per line; polled every second.")

    g = p.add_argument_group("controller arguments").add_mutually_exclusive_group()
    g.add_argument("--gloo", dest="use_gloo", action="store_true", help="Use the Gloo controller (default).")
    g.add_argument("--mpi", dest="use_mpi", action="store_true",
                   help="Start the ranks with mpirun (Open MPI or MPICH); they form the job from MPI.")
    g.add_argument("--jsrun", dest="use_jsrun", action="store_true", help="Not supported yet.")
    return p


def _fail(parser, msg):
    """Exits 2 with a one-line error (argparse's own errors also print usage)."""
    parser.exit(2, f"horovodrun: error: {msg}\n")


def _non_negative(parser, args, names):
    for n in names:
        v = getattr(args, n)
        if v is not None and v < 0:
            _fail(parser, f"--{n.replace('_', '-')}={v} must be >= 0")


def validate(parser, args):
    """Rejects unsupported or inconsistent flags: prints why and exits 2."""
    if args.config_file:
        _fail(parser, "--config-file is not supported yet by horovod_accel; pass the settings as "
                     "command-line flags instead (see horovodrun --help)")
    if args.use_jsrun:
        _fail(parser, "--jsrun is not supported by horovod_accel; launch with the default (Gloo) "
                     "or --mpi.")
    if args.check_build:
        return
    args.elastic = elastic_settings.is_elastic(args.min_num_proc, args.host_discovery_script)
    if args.elastic:
        try:
            (args.num_proc, args.min_num_proc, args.max_num_proc,
             args.elastic_timeout) = elastic_settings.resolve(
                args.num_proc, args.min_num_proc, args.max_num_proc, args.slots,
                args.host_discovery_script, bool(args.hosts or args.hostfile),
                args.elastic_timeout, args.reset_limit, args.cooldown_range, args.use_mpi)
        except ValueError as e:
            _fail(parser, str(e))
    else:
        try:
            elastic_settings.reject_elastic_only(
                [("--max-np", args.max_num_proc), ("--slots-per-host", args.slots),
                 ("--elastic-timeout", args.elastic_timeout), ("--reset-limit", args.reset_limit),
                 ("--blacklist-cooldown-range", args.cooldown_range)],
                "--min-np or --host-discovery-script")
        except ValueError as e:
            _fail(parser, str(e))
    if args.num_proc is None:
        _fail(parser, "the following arguments are required: -np/--num-proc")
    if not args.command:
        _fail(parser, "no command to run; usage: horovodrun -np 2 python train.py")
    _non_negative(parser, args, ["fusion_threshold_mb", "cycle_time_ms", "cache_capacity",
                                 "autotune_warmup_samples", "autotune_steps_per_sample",
                                 "autotune_bayes_opt_max_samples", "stall_check_warning_time_seconds",
                                 "stall_check_shutdown_time_seconds", "num_nccl_streams",
                                 "gloo_timeout_seconds", "start_timeout"])
    noise = args.autotune_gaussian_process_noise
    if noise is not None and not 0 <= noise <= 1:
        _fail(parser, f"--autotune-gaussian-process-noise={noise} must be in [0, 1]")
    for flag, val in (("--mpi-args", args.mpi_args), ("--binding-args", args.binding_args)):
        if val and not args.use_mpi:  # a usage warning of the command line, as argparse's
            print(f"horovodrun: warning: {flag} only applies to MPI launches (--mpi); ignoring it",
                  file=sys.stderr)


def parse_args(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    validate(parser, args)
    return args
