// Runtime lifecycle and wiring: Init (settings, store and rendezvous,
// plugins, timeline, autotune, the process sets and the background thread),
// Shutdown, process-set construction from BackendSelection's choices, and
// the accelerator executor. Enqueue: runtime_enqueue.cc; what a cycle does:
// runtime_cycles.cc (when cycles run: CycleLoop, cycle_loop.h); dynamic
// process sets: runtime_process_sets.cc.
#include "common/runtime.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "common/plugin/plugin_device.h"
#include "common/store/memory_store.h"
#include "common/store/tcp_store.h"
#include "common/util/thread_affinity.h"  // AffinityCoreFor

namespace hvda {
namespace {

// Identity of the shared-memory domain this process is in: ranks with equal
// strings can map each other's POSIX shm segments. Host names alone are not
// enough (containers on different machines are often all "localhost"), so the
// kernel's boot id and the mount namespace (which decides what /dev/shm is)
// are part of it.
std::string ThisHost() {
  char buf[256] = {0};
  gethostname(buf, sizeof(buf) - 1);
  std::string id = buf;
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  if (boot >> boot_id) id += "/" + boot_id;
  char ns[128] = {0};
  if (readlink("/proc/self/ns/mnt", ns, sizeof(ns) - 1) > 0) id += "/" + std::string(ns);
  return id;
}

}  // namespace

Runtime::Runtime(const DeviceRegistrar& register_devices) {
  RegisterPluginDevice(&registry_);
  if (register_devices) register_devices(&registry_);
}

Runtime::~Runtime() { Shutdown(); }

bool Runtime::GenerationEnded() {
  std::lock_guard<std::mutex> lock(failure_mu_);
  return initialized_ && !EndStatusLocked().ok();
}

bool Runtime::GenerationEndTold() { return GenerationEnded() && end_->told(); }

std::string Runtime::GenerationSkew() {
  std::string out;
  if (config_.GetInt("_HOROVOD_ELASTIC_ROUND") > 0) return out;
  for (int r = 0; r < topo_.size; ++r) {
    std::string theirs;
    if (r == topo_.rank ||
        !store_->Get("latest_init/" + std::to_string(r), &theirs, std::chrono::milliseconds(0))
             .ok() ||
        theirs == std::to_string(generation_))
      continue;
    out += " Rank " + std::to_string(r) + " is at its init() #" + theirs + " while this rank is "
           "at #" + std::to_string(generation_) + ".";
  }
  if (!out.empty())
    out += " The ranks called init()/shutdown() a different number of times, or an earlier "
           "init() failed on some ranks only; restart the job.";
  return out;
}

Status Runtime::CheckInitialized() const {
  if (!initialized_)
    return Status::InvalidArgument("Horovod has not been initialized; call hvd.init() first.");
  return Status::OK();
}

bool Runtime::IsHomogeneous() const {
  std::map<std::string, int> per_host;
  for (const auto& h : topo_.hosts) per_host[h]++;
  for (const auto& kv : per_host)
    if (kv.second != per_host.begin()->second) return false;
  return true;
}

Status Runtime::Init(const std::vector<std::vector<int>>& static_sets, bool dynamic,
                     const std::vector<std::string>& plugin_paths) {
  if (initialized_) return Status::OK();
  // Before any Work of this generation exists (initialized_ is false, so no
  // op is accepted meanwhile).
  end_ = std::make_shared<GenerationEnd>();
  HVDA_RETURN_IF_ERROR(Config::FromEnvironment(&config_));
  HVDA_RETURN_IF_ERROR(CheckGpuOperations(config_));  // common/util/config.h
  log_ = Logger(ParseLogLevel(config_.GetString("HOROVOD_LOG_LEVEL")),
                config_.GetBool("HOROVOD_LOG_HIDE_TIME"), config_.GetInt("HOROVOD_RANK"));
  topo_ = Topology();
  topo_.rank = config_.GetInt("HOROVOD_RANK");
  topo_.size = config_.GetInt("HOROVOD_SIZE");
  topo_.local_rank = config_.GetInt("HOROVOD_LOCAL_RANK");
  topo_.local_size = config_.GetInt("HOROVOD_LOCAL_SIZE");
  topo_.cross_rank = config_.GetInt("HOROVOD_CROSS_RANK");
  topo_.cross_size = config_.GetInt("HOROVOD_CROSS_SIZE");
  if (topo_.size < 1 || topo_.rank < 0 || topo_.rank >= topo_.size)
    return Status::InvalidArgument("HOROVOD_RANK=" + std::to_string(topo_.rank) +
                                   " and HOROVOD_SIZE=" + std::to_string(topo_.size) +
                                   " are inconsistent; start the job with horovodrun.");
  // Checked before contacting any peer, so a bad value fails fast everywhere.
  std::vector<std::vector<int>> checked_sets;
  HVDA_RETURN_IF_ERROR(CheckStaticProcessSets(static_sets, topo_.size, &checked_sets));
  int affinity_core = -1;
  HVDA_RETURN_IF_ERROR(AffinityCoreFor(config_.GetString("HOROVOD_THREAD_AFFINITY"),
                                       topo_.local_rank, &affinity_core));
  AutotuneOptions autotune;
  HVDA_RETURN_IF_ERROR(AutotuneOptionsFromConfig(config_, &autotune));
  dynamic_sets_ = dynamic || config_.GetBool("HOROVOD_DYNAMIC_PROCESS_SETS");
  deadlock_seconds_ = std::max(0.0, config_.GetFloat("HOROVOD_DEADLOCK_TIMEOUT_SECONDS"));
  // The controller and backends named are checked here, before any peer is
  // contacted, so every rank fails alike.
  HVDA_RETURN_IF_ERROR(BackendSelection::Create(&registry_, config_, &selection_));

  const double start_timeout = config_.GetFloat("HOROVOD_START_TIMEOUT");
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(start_timeout * 1000));
  const std::string addr = config_.GetString("HOROVOD_GLOO_RENDEZVOUS_ADDR");
  const int64_t port = config_.GetInt("HOROVOD_GLOO_RENDEZVOUS_PORT");
  if (!addr.empty() && port > 0) {
    if (!store_)
      HVDA_RETURN_IF_ERROR(ConnectTcpStore(addr, static_cast<int>(port),
                                           config_.GetString("_HOROVOD_SECRET_KEY"), timeout,
                                           &store_));
  } else if (topo_.size == 1) {
    store_ = std::make_unique<MemoryStore>();
  } else {
    return Status::InvalidArgument(
        "HOROVOD_SIZE=" + std::to_string(topo_.size) +
        " but no rendezvous store is set (HOROVOD_GLOO_RENDEZVOUS_ADDR/PORT). Start multi-process "
        "jobs with horovodrun, e.g. `horovodrun -np 2 python train.py`.");
  }
  ++generation_;
  const int64_t elastic_round = config_.GetInt("_HOROVOD_ELASTIC_ROUND");
  key_prefix_ = elastic_round > 0 ? "e" + std::to_string(elastic_round) + "/"
                                  : "g" + std::to_string(generation_) + "/";
  const std::string& g = key_prefix_;
  // Each rank's latest generation, only read to explain a rendezvous timeout
  // (an elastic round's ranks are numbered by the launcher: nothing to explain).
  if (elastic_round <= 0)
    HVDA_RETURN_IF_ERROR(
        store_->Set("latest_init/" + std::to_string(topo_.rank), std::to_string(generation_)));
  HVDA_RETURN_IF_ERROR(store_->Set(g + "host/" + std::to_string(topo_.rank), ThisHost()));
  topo_.hosts.resize(topo_.size);
  for (int r = 0; r < topo_.size; ++r) {
    Status st = store_->Get(g + "host/" + std::to_string(r), &topo_.hosts[r], timeout);
    if (st.ok()) continue;
    return Status::Aborted("rank " + std::to_string(r) + " did not join the job within " +
                           std::to_string(static_cast<int>(start_timeout)) +
                           " s (HOROVOD_START_TIMEOUT): " + st.reason() + GenerationSkew());
  }

  accel_.Load(plugin_paths);
  accel_timeout_seconds_ = config_.GetFloat("HOROVOD_ACCEL_TIMEOUT_SECONDS");
  cpu_device_.reset();
  for (const auto& d : registry_.devices())
    if (d.kind == DeviceKind::kCPU) cpu_device_ = d.create();
  if (!cpu_device_) return Status::Unknown("no CPU device is registered in this build");

  const std::string tl = config_.GetString("HOROVOD_TIMELINE");
  timeline_allowed_ = !tl.empty();
  if (!tl.empty() && tl != "DYNAMIC" && topo_.rank == 0) {
    std::string err;
    if (!timeline_.Start(tl, config_.GetBool("HOROVOD_TIMELINE_MARK_CYCLES"), &err))
      return Status::InvalidArgument(err + " (HOROVOD_TIMELINE)");
  }

  {
    // The autotune log's hierarchical columns: what the registered backends
    // use on the whole job (not tuned; the devices' registrations decide).
    CommunicatorSpec job;
    job.size = topo_.size;
    job.hosts = topo_.hosts;
    const HierarchyUse hierarchy = selection_.Hierarchy(job, config_);
    autotune.hierarchical_allreduce = hierarchy.allreduce;
    autotune.hierarchical_allgather = hierarchy.allgather;
    tunables_ = std::make_shared<ParameterManager>(autotune, topo_.rank == 0, &log_);
  }

  std::vector<int> all(topo_.size);
  for (int r = 0; r < topo_.size; ++r) all[r] = r;
  std::map<int, std::unique_ptr<ProcessSetState>> sets;
  std::unique_ptr<ProcessSetState> global;
  if (Status st = CreateProcessSet(0, all, &global); !st.ok())
    return st.WithSuffix(GenerationSkew());
  sets[0] = std::move(global);
  next_set_id_ = 1;
  set_ops_seq_ = 0;
  for (const auto& ranks : checked_sets) {
    std::unique_ptr<ProcessSetState> ps;
    HVDA_RETURN_IF_ERROR(CreateProcessSet(next_set_id_, ranks, &ps));
    sets[next_set_id_++] = std::move(ps);
  }
  {
    std::lock_guard<std::mutex> lock(sets_mu_);
    sets_ = std::move(sets);
  }
  {
    std::lock_guard<std::mutex> lock(failure_mu_);
    failure_ = Status::OK();
    ending_ = Status::OK();
  }
  deadlock_end_requested_ = false;  // the background thread starts below
  CycleLoopOptions cycle_options;
  cycle_options.inline_cycles = config_.GetBool("HOROVOD_INLINE_CYCLES");
  cycle_options.device_wait_slice_ms = std::max(0.1, config_.GetFloat("HOROVOD_CYCLE_TIME"));
  cycle_options.affinity_core = affinity_core;
  // Before initialized_: every Work handed out points to this generation's driver.
  Status pinned = cycles_.Start(cycle_options);
  if (!pinned.ok()) log_.Log(LogLevel::kWarning, pinned.reason());
  initialized_ = true;
  return Status::OK();
}

Status Runtime::CreateProcessSet(int id, std::vector<int> ranks,
                                 std::unique_ptr<ProcessSetState>* out) {
  std::sort(ranks.begin(), ranks.end());
  HVDA_RETURN_IF_ERROR(CheckSetRanks(ranks, topo_.size, ""));
  auto ps = std::make_unique<ProcessSetState>();
  ps->id = id;
  ps->ranks = ranks;
  ps->set_rank = ps->SetRankOf(topo_.rank);
  if (ps->member()) {
    CommunicatorSpec spec;
    spec.store = store_.get();
    spec.rank = ps->set_rank;
    spec.size = ps->size();
    spec.global_ranks = ranks;
    for (int r : ranks) spec.hosts.push_back(topo_.hosts[r]);
    spec.timeout_seconds = config_.GetFloat("HOROVOD_GLOO_TIMEOUT_SECONDS");
    spec.config = &config_;
    ps->comm_spec = spec;  // for the accelerator communicator, made on first use
    ps->comm_spec.prefix = key_prefix_ + "ps" + std::to_string(id) + "/accel/";
    spec.prefix = key_prefix_ + "ps" + std::to_string(id) + "/";
    ProcessSetPlanes planes;
    HVDA_RETURN_IF_ERROR(
        selection_.CreateProcessSetPlanes(spec, config_.GetString("HOROVOD_GLOO_IFACE"), &planes));
    ps->transport = std::move(planes.transport);
    ps->eager_pacing = planes.eager_pacing;
    if (log_.Enabled(LogLevel::kDebug)) {
      std::string names;
      for (const auto& b : planes.backends)
        names += (names.empty() ? "" : ", ") + std::string(b->name());
      log_.Log(LogLevel::kDebug, "process set " + std::to_string(id) + ": CPU backends " + names +
                                     "; negotiation over " + planes.negotiation);
    }
    Timeline* tl = topo_.rank == 0 ? &timeline_ : nullptr;
    ps->executor = std::make_unique<Executor>(cpu_device_.get(), std::move(planes.backends), tl);
    HVDA_RETURN_IF_ERROR(ps->executor->status());
    ControllerOptions opts;
    opts.process_set_id = id;
    opts.cache_capacity = static_cast<size_t>(std::max<int64_t>(0, config_.GetInt("HOROVOD_CACHE_CAPACITY")));
    opts.fusion_threshold_bytes = config_.GetInt("HOROVOD_FUSION_THRESHOLD");
    opts.tunables = tunables_;  // NOTE [Autotune sync]
    opts.drives_autotune = id == 0;
    opts.stall.enabled = !config_.GetBool("HOROVOD_STALL_CHECK_DISABLE");
    opts.stall.warning_seconds = config_.GetFloat("HOROVOD_STALL_CHECK_TIME_SECONDS");
    opts.stall.shutdown_seconds = config_.GetFloat("HOROVOD_STALL_SHUTDOWN_TIME_SECONDS");
    opts.stall.deadlock_seconds = deadlock_seconds_;
    ps->controller = std::make_unique<Controller>(ps->transport.get(), opts, ranks, &log_, tl);
  }
  *out = std::move(ps);
  return Status::OK();
}

Status Runtime::DeviceExecutor(ProcessSetState* ps, Executor** out) {
  if (!ps->device_executor) {
    std::string why;
    std::shared_ptr<PluginDevice> device = accel_.device(topo_.local_rank, &why);
    if (!device)
      return Status::Precondition("process set " + std::to_string(ps->id) + " runs an accelerator "
                                  "collective, but this rank has no accelerator: " + why);
    CommunicatorSpec spec = ps->comm_spec;
    spec.device = device.get();  // outlives the executor, which shares its ownership
    std::unique_ptr<CollectiveBackend> backend;
    HVDA_RETURN_IF_ERROR(selection_.CreateDeviceBackend(DeviceKind::kPlugin, spec, &backend));
    std::vector<std::unique_ptr<CollectiveBackend>> backends;
    backends.push_back(std::move(backend));
    Timeline* tl = topo_.rank == 0 ? &timeline_ : nullptr;
    auto ex = std::make_unique<Executor>(device.get(), std::move(backends), tl);
    HVDA_RETURN_IF_ERROR(ex->status());
    ex->set_output_device(device);
    ex->set_progress_notifier([this] { cycles_.WakeForCompletion(); });
    ps->device_executor = std::move(ex);
  }
  *out = ps->device_executor.get();
  return Status::OK();
}

void Runtime::Shutdown() {
  if (!initialized_) return;
  cycles_.Stop();  // the shutdown cycle, collectively with the other ranks
  {
    std::lock_guard<std::mutex> lock(sets_mu_);
    for (auto& kv : sets_)
      kv.second->queue.FailAll(Status::Aborted("Horovod has been shut down."));
    sets_.clear();
  }
  retired_sets_.clear();  // the background thread has ended
  accel_.EndGeneration();
  timeline_.Stop();
  initialized_ = false;
}

Status Runtime::StartTimeline(const std::string& path, bool mark_cycles) {
  HVDA_RETURN_IF_ERROR(CheckInitialized());
  if (!timeline_allowed_)
    return Status::InvalidArgument(
        "Set HOROVOD_TIMELINE=DYNAMIC (or a file name) before hvd.init() to use "
        "start_timeline().");
  if (topo_.rank != 0) return Status::OK();
  std::string err;
  if (!timeline_.Start(path, mark_cycles, &err)) return Status::InvalidArgument(err);
  return Status::OK();
}

Status Runtime::StopTimeline() {
  HVDA_RETURN_IF_ERROR(CheckInitialized());
  if (!timeline_allowed_)
    return Status::InvalidArgument(
        "Set HOROVOD_TIMELINE=DYNAMIC (or a file name) before hvd.init() to use stop_timeline().");
  timeline_.Stop();
  return Status::OK();
}

std::vector<std::string> Runtime::GlobalBackends() {
  std::vector<std::string> out;
  std::lock_guard<std::mutex> lock(sets_mu_);
  auto it = sets_.find(0);
  if (it != sets_.end() && it->second->executor)
    for (const auto& b : it->second->executor->backends()) out.push_back(b->name());
  return out;
}

Status Runtime::BindAccelerator(const std::string& device_type, int index,
                                std::shared_ptr<PluginDevice>* out) {
  HVDA_RETURN_IF_ERROR(CheckInitialized());
  return accel_.Bind(device_type, index, out);
}

Status Runtime::PluginActivityOf(const std::string& device_type,
                                 std::vector<std::pair<std::string, uint64_t>>* counts) {
  return accel_.Activity(device_type, counts);
}

}  // namespace hvda
