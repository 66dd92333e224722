#include "common/util/config.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <stdexcept>

namespace hvda {

const std::vector<ConfigOption>& ConfigOptions() {
  static const std::vector<ConfigOption> kOptions = {
      {"HOROVOD_RANK", ConfigType::kInt, "0", "global rank of this process"},
      {"HOROVOD_SIZE", ConfigType::kInt, "1", "number of processes"},
      {"HOROVOD_LOCAL_RANK", ConfigType::kInt, "0", "rank among the processes of this host"},
      {"HOROVOD_LOCAL_SIZE", ConfigType::kInt, "1", "number of processes on this host"},
      {"HOROVOD_CROSS_RANK", ConfigType::kInt, "0", "index of this host among hosts"},
      {"HOROVOD_CROSS_SIZE", ConfigType::kInt, "1", "number of hosts"},
      {"HOROVOD_HOSTNAME", ConfigType::kString, "localhost", "host name given by the launcher"},
      {"HOROVOD_GLOO_RENDEZVOUS_ADDR", ConfigType::kString, "", "address of horovodrun's rendezvous store"},
      {"HOROVOD_GLOO_RENDEZVOUS_PORT", ConfigType::kInt, "-1", "port of horovodrun's rendezvous store"},
      {"_HOROVOD_SECRET_KEY", ConfigType::kString, "", "per-job secret that the rendezvous store checks"},
      {"_HOROVOD_ELASTIC_ROUND", ConfigType::kInt, "0",
       "elastic round this init() joins (set by hvd.init() in elastic jobs; names its store keys)"},
      {"HOROVOD_GLOO_IFACE", ConfigType::kString, "", "network interface for Gloo TCP"},
      {"HOROVOD_GLOO_TIMEOUT_SECONDS", ConfigType::kFloat, "30", "timeout of Gloo connections and collectives"},
      {"HOROVOD_START_TIMEOUT", ConfigType::kFloat, "30", "seconds to wait for every rank at init"},
      {"_HOROVOD_MPI_SHIM", ConfigType::kString, "",
       "MPI shim loaded by hvd.init() under mpirun (set by it, for the mpi backend)"},
      {"_HOROVOD_MPI_COMM", ConfigType::kInt, "0",
       "Fortran handle of the job's MPI communicator (set by hvd.init() under mpirun)"},
      {"HOROVOD_CONTROLLER", ConfigType::kString, "gloo",
       "controller transport: gloo, or mpi in a job started by mpirun"},
      {"HOROVOD_CPU_OPERATIONS", ConfigType::kString, "shm,gloo",
       "ordered CPU collective backends (shm, gloo, mpi); the first that supports an op wins"},
      {"HOROVOD_FUSION_THRESHOLD", ConfigType::kInt, "134217728", "fusion buffer bytes; 0 disables fusion"},
      {"HOROVOD_CYCLE_TIME", ConfigType::kFloat, "1", "milliseconds between the background thread's cycles (they run ops nobody waits on yet)"},
      {"HOROVOD_INLINE_CYCLES", ConfigType::kBool, "1",
       "a thread that waits on an op runs the negotiation cycles itself (0: the background thread does)"},
      {"HOROVOD_CACHE_CAPACITY", ConfigType::kInt, "1024", "response cache entries; 0 disables the cache"},
      {"HOROVOD_TIMELINE", ConfigType::kString, "", "timeline file written by rank 0, or DYNAMIC"},
      {"HOROVOD_TIMELINE_MARK_CYCLES", ConfigType::kBool, "0", "mark background cycles in the timeline"},
      {"HOROVOD_STALL_CHECK_DISABLE", ConfigType::kBool, "0", "disable the stall inspector"},
      {"HOROVOD_STALL_CHECK_TIME_SECONDS", ConfigType::kFloat, "60", "warn about tensors waiting this long"},
      {"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", ConfigType::kFloat, "0",
       "shut down when a tensor waits this long (0: never)"},
      {"HOROVOD_DEADLOCK_TIMEOUT_SECONDS", ConfigType::kFloat, "5",
       "fail pending ops when every rank has waited this long and none can complete, and end "
       "the job generation (the next `init()` starts one in step); 0: never"},
      {"HOROVOD_DYNAMIC_PROCESS_SETS", ConfigType::kBool, "0", "allow add/remove_process_set"},
      {"HOROVOD_LOG_LEVEL", ConfigType::kString, "WARNING", "TRACE, DEBUG, INFO, WARNING, ERROR or FATAL"},
      {"HOROVOD_LOG_HIDE_TIME", ConfigType::kBool, "0", "omit timestamps in log lines"},
      {"HOROVOD_HIERARCHICAL_ALLREDUCE", ConfigType::kBool, "",
       "allreduce over hosts in two levels (shm per host, Gloo between hosts); unset: on when "
       "the ranks span hosts with several ranks on one"},
      {"HOROVOD_HIERARCHICAL_ALLGATHER", ConfigType::kBool, "",
       "allgather over hosts in two levels, like HOROVOD_HIERARCHICAL_ALLREDUCE"},
      {"HOROVOD_SHM_SEGMENT_BYTES", ConfigType::kInt, "4194304",
       "bytes of shared memory per rank used by the shm backend"},
      {"HOROVOD_THREAD_AFFINITY", ConfigType::kString, "",
       "comma-separated cores; local rank i pins its background thread to entry i"},
      {"HOROVOD_ACCEL_PLUGINS", ConfigType::kString, "",
       "device plugins to load: comma-separated names (libhorovod_accel_<name>.so) or paths"},
      {"HOROVOD_ACCEL_TIMEOUT_SECONDS", ConfigType::kFloat, "300",
       "an accelerator collective still running after this long aborts its communicator"},
      {"HOROVOD_GPU_OPERATIONS", ConfigType::kString, "",
       "upstream's GPU backend choice: NCCL (or the plugin's library, e.g. ECCL) for every op"},
      {"HOROVOD_GPU_ALLREDUCE", ConfigType::kString, "", "upstream's GPU allreduce backend"},
      {"HOROVOD_GPU_ALLGATHER", ConfigType::kString, "", "upstream's GPU allgather backend"},
      {"HOROVOD_GPU_BROADCAST", ConfigType::kString, "", "upstream's GPU broadcast backend"},
      {"HOROVOD_GPU_ALLTOALL", ConfigType::kString, "", "upstream's GPU alltoall backend"},
      {"HOROVOD_GPU_REDUCESCATTER", ConfigType::kString, "", "upstream's GPU reducescatter backend"},
      {"HOROVOD_AUTOTUNE", ConfigType::kBool, "0",
       "Bayesian autotuning of the fusion threshold and cycle time that are not set explicitly"},
      {"HOROVOD_AUTOTUNE_LOG", ConfigType::kString, "",
       "CSV log of the autotuning trials, written by rank 0 (upstream's columns)"},
      {"HOROVOD_AUTOTUNE_WARMUP_SAMPLES", ConfigType::kInt, "3",
       "autotune: trials run and discarded before any is scored"},
      {"HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", ConfigType::kInt, "10",
       "autotune: steps (a tensor reduced again) per sample; a trial's score is the median of 5"},
      {"HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", ConfigType::kInt, "20",
       "autotune: scored trials, after which the best values are kept"},
      {"HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", ConfigType::kFloat, "0.8",
       "autotune: observation noise of the Gaussian process, relative to the scores' spread, in [0, 1]"},
  };
  return kOptions;
}

namespace {

const ConfigOption* Find(const std::string& env) {
  for (const auto& o : ConfigOptions())
    if (env == o.env) return &o;
  return nullptr;
}

bool ParseBool(const std::string& v) {
  // Upstream parses booleans with strtol(v) > 0; accept true/yes too.
  if (v == "true" || v == "TRUE" || v == "True" || v == "yes") return true;
  return std::strtol(v.c_str(), nullptr, 10) > 0;
}

Status Validate(const ConfigOption& o, const std::string& v) {
  try {
    size_t used = 0;
    if (o.type == ConfigType::kInt) {
      (void)std::stoll(v, &used);
    } else if (o.type == ConfigType::kFloat) {
      (void)std::stod(v, &used);
    } else {
      return Status::OK();
    }
    if (used != v.size()) throw std::invalid_argument(v);
  } catch (const std::exception&) {
    return Status::InvalidArgument(std::string(o.env) + "='" + v + "' is not a valid " +
                                   (o.type == ConfigType::kInt ? "integer" : "number") + " (" +
                                   o.doc + ")");
  }
  return Status::OK();
}

}  // namespace

Status Config::FromEnvironment(Config* out) {
  Config c;
  for (const auto& o : ConfigOptions()) {
    const char* v = std::getenv(o.env);
    bool set = v != nullptr && v[0] != '\0';
    std::string value = set ? std::string(v) : std::string(o.default_value);
    if (set) HVDA_RETURN_IF_ERROR(Validate(o, value));
    c.raw_[o.env] = value;
    c.set_by_user_[o.env] = set;
  }
  *out = std::move(c);
  return Status::OK();
}

Status Config::Set(const std::string& env, const std::string& value) {
  const ConfigOption* o = Find(env);
  if (o == nullptr) return Status::InvalidArgument("unknown setting " + env);
  HVDA_RETURN_IF_ERROR(Validate(*o, value));
  raw_[env] = value;
  set_by_user_[env] = true;
  return Status::OK();
}

bool Config::IsSet(const std::string& env) const {
  auto it = set_by_user_.find(env);
  return it != set_by_user_.end() && it->second;
}

const std::string& Config::GetString(const std::string& env) const {
  auto it = raw_.find(env);
  if (it == raw_.end()) throw std::logic_error("setting not registered: " + env);
  return it->second;
}

int64_t Config::GetInt(const std::string& env) const { return std::stoll(GetString(env)); }
double Config::GetFloat(const std::string& env) const { return std::stod(GetString(env)); }
bool Config::GetBool(const std::string& env) const { return ParseBool(GetString(env)); }

// Upstream's selection values. Upstream's HOROVOD_GPU_OPERATIONS /
// HOROVOD_GPU_<OP> chose, at build time, which library runs GPU collectives
// (the seeds set NCCL). Here the accelerator's plugin always runs them with
// its collective library, which is what NCCL (or a vendor's NCCL-like
// library) means; host-staged choices are refused with a clear message
// instead of being silently ignored.
Status CheckGpuOperations(const Config& config) {
  for (const char* var : {"HOROVOD_GPU_OPERATIONS", "HOROVOD_GPU_ALLREDUCE",
                          "HOROVOD_GPU_ALLGATHER", "HOROVOD_GPU_BROADCAST",
                          "HOROVOD_GPU_ALLTOALL", "HOROVOD_GPU_REDUCESCATTER"}) {
    std::string v = config.GetString(var);
    std::transform(v.begin(), v.end(), v.begin(), ::toupper);
    if (v.empty() || v == "NCCL" || v == "ECCL" || v == "RCCL" || v == "CCL") continue;
    return Status::InvalidArgument(
        std::string(var) + "=" + config.GetString(var) + " is not available: horovod_accel runs "
        "accelerator collectives with the device plugin's collective library (NCCL on CUDA, "
        "ECCL on GCU). Set " + var + "=NCCL (or unset it).");
  }
  return Status::OK();
}

bool IsUpstreamCpuOperationNotBuilt(const std::string& name) {
  return name == "ccl" || name == "nccl";
}

}  // namespace hvda
