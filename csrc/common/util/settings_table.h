// The one table of horovod_accel's settings: every environment variable the
// core or the Python edge reads, with its type, default, accepted range,
// upstream Horovod's name for it and a one-line meaning. Everything else is
// derived from it: the typed `Settings` struct (settings.h), the Python view
// (`_core.settings_table()`, horovod_accel/common/settings.py) and
// docs/settings.md (tests/python/test_docs.py keeps the page in step).
//
// Two lists, by who consumes them:
//  - HVDA_JOB_SETTINGS: who this rank is and how it reaches its peers. The
//    launchers set them (horovodrun, the mpirun bootstrap, the elastic
//    driver); init() in Python reads them and hands the core a JobSpec
//    (job_spec.h). The core never reads them from the environment.
//  - HVDA_CORE_SETTINGS: the core's behaviour, read once per init() into a
//    Settings (Settings::FromEnvironment, called at the binding's edge).
//  - HVDA_PYTHON_SETTINGS: read by the Python package only (through its view
//    of this table, horovod_accel/common/settings.py); no Settings field.
//
// X(field, kind, env, default, min, max, upstream, doc)
//   kind:     INT (int64_t), FLOAT (double), BOOL, AUTO_BOOL (unset: the
//             core decides), STRING.
//   default:  the value when the variable is unset or empty, as text.
//   min, max: the accepted range of INT/FLOAT values (HVDA_UNBOUNDED: none);
//             a value outside fails init() with a message naming both.
//   upstream: upstream Horovod's name of the same setting; "" for
//             horovod_accel's own.
// Order is the order docs/settings.md lists them in.
#pragma once

#define HVDA_UNBOUNDED_MIN (-1e300)
#define HVDA_UNBOUNDED_MAX (1e300)

#define HVDA_JOB_SETTINGS(X)                                                                      \
  X(rank, INT, "HOROVOD_RANK", "0", HVDA_UNBOUNDED_MIN, HVDA_UNBOUNDED_MAX, "HOROVOD_RANK",        \
    "global rank of this process")                                                                \
  X(size, INT, "HOROVOD_SIZE", "1", HVDA_UNBOUNDED_MIN, HVDA_UNBOUNDED_MAX, "HOROVOD_SIZE",        \
    "number of processes")                                                                        \
  X(local_rank, INT, "HOROVOD_LOCAL_RANK", "0", HVDA_UNBOUNDED_MIN, HVDA_UNBOUNDED_MAX,            \
    "HOROVOD_LOCAL_RANK", "rank among the processes of this host")                                \
  X(local_size, INT, "HOROVOD_LOCAL_SIZE", "1", HVDA_UNBOUNDED_MIN, HVDA_UNBOUNDED_MAX,            \
    "HOROVOD_LOCAL_SIZE", "number of processes on this host")                                     \
  X(cross_rank, INT, "HOROVOD_CROSS_RANK", "0", HVDA_UNBOUNDED_MIN, HVDA_UNBOUNDED_MAX,            \
    "HOROVOD_CROSS_RANK", "index of this host among hosts")                                       \
  X(cross_size, INT, "HOROVOD_CROSS_SIZE", "1", HVDA_UNBOUNDED_MIN, HVDA_UNBOUNDED_MAX,            \
    "HOROVOD_CROSS_SIZE", "number of hosts")                                                      \
  X(hostname, STRING, "HOROVOD_HOSTNAME", "localhost", 0, 0, "HOROVOD_HOSTNAME",                  \
    "host name given by the launcher")                                                            \
  X(store_addr, STRING, "HOROVOD_GLOO_RENDEZVOUS_ADDR", "", 0, 0, "HOROVOD_GLOO_RENDEZVOUS_ADDR",  \
    "address of horovodrun's rendezvous store")                                                   \
  X(store_port, INT, "HOROVOD_GLOO_RENDEZVOUS_PORT", "-1", -1, 65535,                             \
    "HOROVOD_GLOO_RENDEZVOUS_PORT", "port of horovodrun's rendezvous store")                     \
  X(secret, STRING, "_HOROVOD_SECRET_KEY", "", 0, 0, "",                                          \
    "per-job secret that the rendezvous store checks")                                            \
  X(elastic_round, INT, "_HOROVOD_ELASTIC_ROUND", "0", 0, HVDA_UNBOUNDED_MAX, "",                 \
    "elastic round this init() joins (set by the elastic driver; names its store keys)")          \
  X(mpi_shim, STRING, "_HOROVOD_MPI_SHIM", "", 0, 0, "",                                          \
    "MPI shim loaded by hvd.init() under mpirun (set by it, for the mpi backend)")                \
  X(mpi_comm, INT, "_HOROVOD_MPI_COMM", "0", HVDA_UNBOUNDED_MIN, HVDA_UNBOUNDED_MAX, "",          \
    "Fortran handle of the job's MPI communicator (set by hvd.init() under mpirun)")

#define HVDA_CORE_SETTINGS(X)                                                                     \
  X(gloo_iface, STRING, "HOROVOD_GLOO_IFACE", "", 0, 0, "HOROVOD_GLOO_IFACE",                     \
    "network interface for Gloo TCP")                                                             \
  X(gloo_timeout_seconds, FLOAT, "HOROVOD_GLOO_TIMEOUT_SECONDS", "30", 0, HVDA_UNBOUNDED_MAX,     \
    "HOROVOD_GLOO_TIMEOUT_SECONDS", "timeout of Gloo connections and collectives")               \
  X(start_timeout, FLOAT, "HOROVOD_START_TIMEOUT", "30", 0, HVDA_UNBOUNDED_MAX,                   \
    "HOROVOD_START_TIMEOUT", "seconds to wait for every rank at init")                           \
  X(controller, STRING, "HOROVOD_CONTROLLER", "gloo", 0, 0, "HOROVOD_CONTROLLER",                 \
    "controller transport: gloo, or mpi in a job started by mpirun")                              \
  X(cpu_operations, STRING, "HOROVOD_CPU_OPERATIONS", "shm,gloo", 0, 0, "HOROVOD_CPU_OPERATIONS", \
    "ordered CPU collective backends (shm, gloo, mpi); the first that supports an op wins")       \
  X(fusion_threshold, INT, "HOROVOD_FUSION_THRESHOLD", "134217728", 0, HVDA_UNBOUNDED_MAX,        \
    "HOROVOD_FUSION_THRESHOLD", "fusion buffer bytes; 0 disables fusion")                        \
  X(cycle_time_ms, FLOAT, "HOROVOD_CYCLE_TIME", "1", 0, HVDA_UNBOUNDED_MAX, "HOROVOD_CYCLE_TIME", \
    "milliseconds between the background thread's cycles (they run ops nobody waits on yet)")    \
  X(inline_cycles, BOOL, "HOROVOD_INLINE_CYCLES", "1", 0, 0, "",                                  \
    "a thread that waits on an op runs the negotiation cycles itself (0: the background thread "  \
    "does)")                                                                                      \
  X(cache_capacity, INT, "HOROVOD_CACHE_CAPACITY", "1024", 0, HVDA_UNBOUNDED_MAX,                 \
    "HOROVOD_CACHE_CAPACITY", "response cache entries; 0 disables the cache")                    \
  X(timeline, STRING, "HOROVOD_TIMELINE", "", 0, 0, "HOROVOD_TIMELINE",                           \
    "timeline file written by rank 0, or DYNAMIC")                                                \
  X(timeline_mark_cycles, BOOL, "HOROVOD_TIMELINE_MARK_CYCLES", "0", 0, 0,                        \
    "HOROVOD_TIMELINE_MARK_CYCLES", "mark background cycles in the timeline")                    \
  X(stall_check_disable, BOOL, "HOROVOD_STALL_CHECK_DISABLE", "0", 0, 0,                          \
    "HOROVOD_STALL_CHECK_DISABLE", "disable the stall inspector")                                \
  X(stall_check_seconds, FLOAT, "HOROVOD_STALL_CHECK_TIME_SECONDS", "60", 0, HVDA_UNBOUNDED_MAX,  \
    "HOROVOD_STALL_CHECK_TIME_SECONDS", "warn about tensors waiting this long")                  \
  X(stall_shutdown_seconds, FLOAT, "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "0", 0,                 \
    HVDA_UNBOUNDED_MAX, "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS",                                    \
    "shut down when a tensor waits this long (0: never)")                                         \
  X(deadlock_seconds, FLOAT, "HOROVOD_DEADLOCK_TIMEOUT_SECONDS", "5", 0, HVDA_UNBOUNDED_MAX, "",  \
    "fail pending ops when every rank has waited this long and none can complete, and end the "  \
    "job generation (the next `init()` starts one in step); 0: never")                           \
  X(dynamic_process_sets, BOOL, "HOROVOD_DYNAMIC_PROCESS_SETS", "0", 0, 0,                        \
    "HOROVOD_DYNAMIC_PROCESS_SETS", "allow add/remove_process_set")                              \
  X(log_level, STRING, "HOROVOD_LOG_LEVEL", "WARNING", 0, 0, "HOROVOD_LOG_LEVEL",                 \
    "TRACE, DEBUG, INFO, WARNING, ERROR or FATAL")                                                \
  X(log_hide_time, BOOL, "HOROVOD_LOG_HIDE_TIME", "0", 0, 0, "HOROVOD_LOG_HIDE_TIME",             \
    "omit timestamps in log lines")                                                               \
  X(hierarchical_allreduce, AUTO_BOOL, "HOROVOD_HIERARCHICAL_ALLREDUCE", "", 0, 0,                \
    "HOROVOD_HIERARCHICAL_ALLREDUCE",                                                             \
    "allreduce over hosts in two levels (shm per host, Gloo between hosts); unset: on when the "  \
    "ranks span hosts with several ranks on one")                                                 \
  X(hierarchical_allgather, AUTO_BOOL, "HOROVOD_HIERARCHICAL_ALLGATHER", "", 0, 0,                \
    "HOROVOD_HIERARCHICAL_ALLGATHER",                                                             \
    "allgather over hosts in two levels, like HOROVOD_HIERARCHICAL_ALLREDUCE")                    \
  X(shm_segment_bytes, INT, "HOROVOD_SHM_SEGMENT_BYTES", "4194304", 4096, HVDA_UNBOUNDED_MAX, "", \
    "bytes of shared memory per rank used by the shm backend")                                    \
  X(thread_affinity, STRING, "HOROVOD_THREAD_AFFINITY", "", 0, 0, "HOROVOD_THREAD_AFFINITY",      \
    "comma-separated cores; local rank i pins its background thread to entry i")                 \
  X(accel_plugins, STRING, "HOROVOD_ACCEL_PLUGINS", "", 0, 0, "",                                 \
    "device plugins to load: comma-separated names (libhorovod_accel_<name>.so) or paths")        \
  X(accel_timeout_seconds, FLOAT, "HOROVOD_ACCEL_TIMEOUT_SECONDS", "300", 0, HVDA_UNBOUNDED_MAX,  \
    "", "an accelerator collective still running after this long aborts its communicator")       \
  X(gpu_operations, STRING, "HOROVOD_GPU_OPERATIONS", "", 0, 0, "HOROVOD_GPU_OPERATIONS",         \
    "upstream's GPU backend choice: NCCL (or the plugin's library, e.g. ECCL) for every op")      \
  X(gpu_allreduce, STRING, "HOROVOD_GPU_ALLREDUCE", "", 0, 0, "HOROVOD_GPU_ALLREDUCE",            \
    "upstream's GPU allreduce backend")                                                           \
  X(gpu_allgather, STRING, "HOROVOD_GPU_ALLGATHER", "", 0, 0, "HOROVOD_GPU_ALLGATHER",            \
    "upstream's GPU allgather backend")                                                           \
  X(gpu_broadcast, STRING, "HOROVOD_GPU_BROADCAST", "", 0, 0, "HOROVOD_GPU_BROADCAST",            \
    "upstream's GPU broadcast backend")                                                           \
  X(gpu_alltoall, STRING, "HOROVOD_GPU_ALLTOALL", "", 0, 0, "HOROVOD_GPU_ALLTOALL",               \
    "upstream's GPU alltoall backend")                                                            \
  X(gpu_reducescatter, STRING, "HOROVOD_GPU_REDUCESCATTER", "", 0, 0,                             \
    "HOROVOD_GPU_REDUCESCATTER", "upstream's GPU reducescatter backend")                         \
  X(autotune, BOOL, "HOROVOD_AUTOTUNE", "0", 0, 0, "HOROVOD_AUTOTUNE",                            \
    "Bayesian autotuning of the fusion threshold and cycle time that are not set explicitly")     \
  X(autotune_log, STRING, "HOROVOD_AUTOTUNE_LOG", "", 0, 0, "HOROVOD_AUTOTUNE_LOG",               \
    "CSV log of the autotuning trials, written by rank 0 (upstream's columns)")                   \
  X(autotune_warmup_samples, INT, "HOROVOD_AUTOTUNE_WARMUP_SAMPLES", "3", 0, 1000000,             \
    "HOROVOD_AUTOTUNE_WARMUP_SAMPLES", "autotune: trials run and discarded before any is scored") \
  X(autotune_steps_per_sample, INT, "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", "10", 1, 1000000,        \
    "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE",                                                          \
    "autotune: steps (a tensor reduced again) per sample; a trial's score is the median of 5")    \
  X(autotune_max_samples, INT, "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "20", 1, 1000,           \
    "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES",                                                     \
    "autotune: scored trials, after which the best values are kept")                              \
  X(autotune_noise, FLOAT, "HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "0.8", 0, 1,                \
    "HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE",                                                    \
    "autotune: observation noise of the Gaussian process, relative to the scores' spread")

#define HVDA_PYTHON_SETTINGS(X)                                                                   \
  X(elastic, BOOL, "HOROVOD_ELASTIC", "0", 0, 0, "HOROVOD_ELASTIC",                               \
    "this rank is a worker of an elastic job (set by horovodrun's elastic driver)")              \
  X(threads_per_rank, STRING, "HOROVOD_THREADS_PER_RANK", "auto", 0, 0, "",                       \
    "compute threads of each rank's frameworks: auto (its share of the host's CPUs), a count, "  \
    "or off (docs/design/compute_threads.md)")                                                    \
  X(mpi_flavour, STRING, "HOROVOD_MPI_FLAVOUR", "", 0, 0, "",                                     \
    "MPI ABI family (openmpi or mpich) of a job started by mpirun, when its launcher's "         \
    "variables do not tell")                                                                      \
  X(mpi_lib, STRING, "HOROVOD_MPI_LIB", "", 0, 0, "",                                             \
    "path of the libmpi to load for a job started by mpirun (default: the family's soname)")
