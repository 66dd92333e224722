"""Maps horovodrun's tuneable flags to the HOROVOD_* variables the core reads
(upstream's runner/common/util/config_parser.py set_env_from_args). Only flags
the user gave are exported, so values already in the environment stay in
effect otherwise."""


def _flag(v):
    return "1" if v else "0"


def env_from_args(args):
    """Returns {name: value} for the flags set in `args` (from args.parse_args)."""
    env = {}

    def put(name, value, fn=str):
        if value is not None:
            env[name] = fn(value)

    put("HOROVOD_FUSION_THRESHOLD", args.fusion_threshold_mb, lambda mb: str(mb * 1024 * 1024))
    put("HOROVOD_CYCLE_TIME", args.cycle_time_ms)
    put("HOROVOD_CACHE_CAPACITY", args.cache_capacity)
    put("HOROVOD_HIERARCHICAL_ALLREDUCE", args.hierarchical_allreduce, _flag)
    put("HOROVOD_HIERARCHICAL_ALLGATHER", args.hierarchical_allgather, _flag)
    put("HOROVOD_TORUS_ALLREDUCE", args.torus_allreduce, _flag)

    if args.autotune:  # like upstream, the autotune knobs only travel with --autotune
        put("HOROVOD_AUTOTUNE", args.autotune, _flag)
        put("HOROVOD_AUTOTUNE_LOG", args.autotune_log_file)
        put("HOROVOD_AUTOTUNE_WARMUP_SAMPLES", args.autotune_warmup_samples)
        put("HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", args.autotune_steps_per_sample)
        put("HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", args.autotune_bayes_opt_max_samples)
        put("HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", args.autotune_gaussian_process_noise)
    elif args.autotune is False:
        put("HOROVOD_AUTOTUNE", False, _flag)

    if args.timeline_filename:  # mark-cycles only means something with a timeline
        put("HOROVOD_TIMELINE", args.timeline_filename)
        put("HOROVOD_TIMELINE_MARK_CYCLES", args.timeline_mark_cycles, _flag)

    put("HOROVOD_STALL_CHECK_DISABLE", args.no_stall_check, _flag)
    put("HOROVOD_STALL_CHECK_TIME_SECONDS", args.stall_check_warning_time_seconds)
    put("HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", args.stall_check_shutdown_time_seconds)

    put("HOROVOD_MPI_THREADS_DISABLE", args.mpi_threads_disable, _flag)
    put("HOROVOD_NUM_NCCL_STREAMS", args.num_nccl_streams)
    if args.tcp_flag:
        env["NCCL_IB_DISABLE"] = "1"
    put("HOROVOD_THREAD_AFFINITY", args.thread_affinity)
    put("HOROVOD_GLOO_TIMEOUT_SECONDS", args.gloo_timeout_seconds)
    put("HOROVOD_THREADS_PER_RANK", getattr(args, "threads_per_rank", None))

    put("HOROVOD_LOG_LEVEL", args.log_level)
    # --log-without-timestamp hides the time. (Upstream 0.28 exports the flag's
    # stored value unchanged, which inverts it; we export what the flag says.)
    put("HOROVOD_LOG_HIDE_TIME", args.log_with_timestamp, lambda with_ts: _flag(not with_ts))

    put("HOROVOD_START_TIMEOUT", args.start_timeout)
    if args.nics:
        env["HOROVOD_GLOO_IFACE"] = args.nics[0]
        env["NCCL_SOCKET_IFNAME"] = ",".join(args.nics)
    return env
