// Generation: Start (checks, store and rendezvous, plugins, timeline,
// autotune, the process sets and the background thread), Stop, process-set
// construction from BackendSelection's choices, and the accelerator
// executor. Enqueue: generation_enqueue.cc; what a cycle does:
// generation_cycles.cc (when cycles run: CycleLoop, cycle_loop.h); dynamic
// process sets: generation_process_sets.cc.
#include "common/generation.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>

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

std::chrono::milliseconds StartTimeout(const Settings& s) {
  return std::chrono::milliseconds(static_cast<int64_t>(s.start_timeout * 1000));
}

}  // namespace

Generation::Generation(const JobSpec& job, const Process& process)
    : job_(job), registry_(process.registry), accel_(process.accel), log_(process.log) {}

Generation::~Generation() { Stop(); }

Status Generation::Start(const JobSpec& job, const Options& options, const Process& process,
                         std::shared_ptr<Generation>* out) {
  // Shared from the start: the CycleLoop's driver holds it weakly.
  std::shared_ptr<Generation> g(new Generation(job, process));
  std::vector<std::vector<int>> checked_sets;
  int affinity_core = -1;
  HVDA_RETURN_IF_ERROR(g->CheckJob(&checked_sets, &affinity_core, options));
  HVDA_RETURN_IF_ERROR(g->ConnectStore());
  g->number_ = ++*process.inits;
  const int64_t round = job.elastic_round;
  g->key_prefix_ =
      round > 0 ? "e" + std::to_string(round) + "/" : "g" + std::to_string(g->number_) + "/";
  HVDA_RETURN_IF_ERROR(g->Rendezvous());
  g->accel_->Load(options.plugin_paths);
  for (const auto& d : process.registry->devices())
    if (d.kind == DeviceKind::kCPU) g->cpu_device_ = d.create();
  if (!g->cpu_device_) return Status::Unknown("no CPU device is registered in this build");
  HVDA_RETURN_IF_ERROR(g->StartTimelineFromSettings());
  g->MakeTunables();
  HVDA_RETURN_IF_ERROR(g->CreateSets(checked_sets));
  HVDA_RETURN_IF_ERROR(g->StartCycles(affinity_core));
  *out = std::move(g);
  return Status::OK();
}

// Everything that fails alike on every rank, before any peer is contacted.
Status Generation::CheckJob(std::vector<std::vector<int>>* checked_sets, int* affinity_core,
                            const Options& options) {
  HVDA_RETURN_IF_ERROR(CheckGpuOperations(job_.settings));
  if (job_.topo.size < 1 || job_.topo.rank < 0 || job_.topo.rank >= job_.topo.size)
    return Status::InvalidArgument(std::string(setting_env::rank) + "=" +
                                   std::to_string(job_.topo.rank) + " and " + setting_env::size +
                                   "=" + std::to_string(job_.topo.size) +
                                   " are inconsistent; start the job with horovodrun.");
  HVDA_RETURN_IF_ERROR(CheckStaticProcessSets(options.static_sets, job_.topo.size, checked_sets));
  HVDA_RETURN_IF_ERROR(
      AffinityCoreFor(job_.settings.thread_affinity, job_.topo.local_rank, affinity_core));
  dynamic_sets_ = options.dynamic_sets || job_.settings.dynamic_process_sets;
  // The controller and backends named are checked here, so every rank fails
  // alike.
  return BackendSelection::Create(registry_, job_, &selection_);
}

Status Generation::ConnectStore() {
  if (!job_.store_addr.empty() && job_.store_port > 0)
    return ConnectTcpStore(job_.store_addr, job_.store_port, job_.secret,
                           StartTimeout(job_.settings), &store_);
  if (job_.topo.size == 1) {
    store_ = std::make_unique<MemoryStore>();
    return Status::OK();
  }
  return Status::InvalidArgument(
      std::string(setting_env::size) + "=" + std::to_string(job_.topo.size) +
      " but no rendezvous store is set (" + setting_env::store_addr + "/PORT). Start "
      "multi-process jobs with horovodrun, e.g. `horovodrun -np 2 python train.py`.");
}

Status Generation::Rendezvous() {
  const std::string& g = key_prefix_;
  // Each rank's latest generation, only read to explain a rendezvous timeout
  // (an elastic round's ranks are numbered by the launcher: nothing to explain).
  if (job_.elastic_round <= 0)
    HVDA_RETURN_IF_ERROR(
        store_->Set("latest_init/" + std::to_string(job_.topo.rank), std::to_string(number_)));
  HVDA_RETURN_IF_ERROR(store_->Set(g + "host/" + std::to_string(job_.topo.rank), ThisHost()));
  hosts_.resize(job_.topo.size);
  for (int r = 0; r < job_.topo.size; ++r) {
    Status st =
        store_->Get(g + "host/" + std::to_string(r), &hosts_[r], StartTimeout(job_.settings));
    if (st.ok()) continue;
    return Status::Aborted("rank " + std::to_string(r) + " did not join the job within " +
                           std::to_string(static_cast<int>(job_.settings.start_timeout)) + " s (" +
                           setting_env::start_timeout + "): " + st.reason() + GenerationSkew());
  }
  return Status::OK();
}

std::string Generation::GenerationSkew() {
  std::string out;
  if (job_.elastic_round > 0) return out;
  for (int r = 0; r < job_.topo.size; ++r) {
    std::string theirs;
    if (r == job_.topo.rank ||
        !store_->Get("latest_init/" + std::to_string(r), &theirs, std::chrono::milliseconds(0))
             .ok() ||
        theirs == std::to_string(number_))
      continue;
    out += " Rank " + std::to_string(r) + " is at its init() #" + theirs + " while this rank is "
           "at #" + std::to_string(number_) + ".";
  }
  if (!out.empty())
    out += " The ranks called init()/shutdown() a different number of times, or an earlier "
           "init() failed on some ranks only; restart the job.";
  return out;
}

Status Generation::StartTimelineFromSettings() {
  const std::string& tl = job_.settings.timeline;
  timeline_allowed_ = !tl.empty();
  if (!tl.empty() && tl != "DYNAMIC" && job_.topo.rank == 0) {
    std::string err;
    if (!timeline_.Start(tl, job_.settings.timeline_mark_cycles, &err))
      return Status::InvalidArgument(err + " (" + setting_env::timeline + ")");
  }
  return Status::OK();
}

void Generation::MakeTunables() {
  AutotuneOptions autotune = AutotuneOptionsFrom(job_.settings);
  // The autotune log's hierarchical columns: what the registered backends
  // use on the whole job (not tuned; the devices' registrations decide).
  CommunicatorSpec whole;
  whole.size = job_.topo.size;
  whole.hosts = hosts_;
  const HierarchyUse hierarchy = selection_.Hierarchy(whole, job_.settings);
  autotune.hierarchical_allreduce = hierarchy.allreduce;
  autotune.hierarchical_allgather = hierarchy.allgather;
  tunables_ = std::make_shared<ParameterManager>(autotune, job_.topo.rank == 0, log_);
}

Status Generation::CreateSets(const std::vector<std::vector<int>>& checked_sets) {
  std::vector<int> all(job_.topo.size);
  for (int r = 0; r < job_.topo.size; ++r) all[r] = r;
  std::map<int, std::unique_ptr<ProcessSetState>> sets;
  std::unique_ptr<ProcessSetState> global;
  if (Status st = CreateProcessSet(0, all, &global); !st.ok())
    return st.WithSuffix(GenerationSkew());
  sets[0] = std::move(global);
  for (const auto& ranks : checked_sets) {
    std::unique_ptr<ProcessSetState> ps;
    HVDA_RETURN_IF_ERROR(CreateProcessSet(next_set_id_, ranks, &ps));
    sets[next_set_id_++] = std::move(ps);
  }
  std::lock_guard<std::mutex> lock(sets_mu_);
  sets_ = std::move(sets);
  return Status::OK();
}

Status Generation::StartCycles(int affinity_core) {
  CycleLoopOptions cycle_options;
  cycle_options.inline_cycles = job_.settings.inline_cycles;
  cycle_options.device_wait_slice_ms = std::max(0.1, job_.settings.cycle_time_ms);
  cycle_options.affinity_core = affinity_core;
  // Every Work handed out points to this generation's driver, which keeps
  // this generation alive while it drives (weakly otherwise).
  Status pinned = cycles_.Start(cycle_options, weak_from_this());
  running_ = true;
  if (!pinned.ok()) log_->Log(LogLevel::kWarning, pinned.reason());
  return Status::OK();
}

bool Generation::Ended() {
  std::lock_guard<std::mutex> lock(failure_mu_);
  return !EndStatusLocked().ok();
}

bool Generation::EndTold() { return Ended() && end_->told(); }

bool Generation::IsHomogeneous() const {
  std::map<std::string, int> per_host;
  for (const auto& h : hosts_) per_host[h]++;
  for (const auto& kv : per_host)
    if (kv.second != per_host.begin()->second) return false;
  return true;
}

Status Generation::CreateProcessSet(int id, std::vector<int> ranks,
                                    std::unique_ptr<ProcessSetState>* out) {
  std::sort(ranks.begin(), ranks.end());
  HVDA_RETURN_IF_ERROR(CheckSetRanks(ranks, job_.topo.size, ""));
  auto ps = std::make_unique<ProcessSetState>();
  ps->id = id;
  ps->ranks = ranks;
  ps->set_rank = ps->SetRankOf(job_.topo.rank);
  if (ps->member()) {
    CommunicatorSpec spec;
    spec.store = store_.get();
    spec.rank = ps->set_rank;
    spec.size = ps->size();
    spec.global_ranks = ranks;
    for (int r : ranks) spec.hosts.push_back(hosts_[r]);
    spec.timeout_seconds = job_.settings.gloo_timeout_seconds;
    spec.job = &job_;
    ps->comm_spec = spec;  // for the accelerator communicator, made on first use
    ps->comm_spec.prefix = key_prefix_ + "ps" + std::to_string(id) + "/accel/";
    spec.prefix = key_prefix_ + "ps" + std::to_string(id) + "/";
    ProcessSetPlanes planes;
    HVDA_RETURN_IF_ERROR(
        selection_.CreateProcessSetPlanes(spec, job_.settings.gloo_iface, &planes));
    ps->transport = std::move(planes.transport);
    ps->eager_pacing = planes.eager_pacing;
    if (log_->Enabled(LogLevel::kDebug)) {
      std::string names;
      for (const auto& b : planes.backends)
        names += (names.empty() ? "" : ", ") + std::string(b->name());
      log_->Log(LogLevel::kDebug, "process set " + std::to_string(id) + ": CPU backends " + names +
                                      "; negotiation over " + planes.negotiation);
    }
    Timeline* tl = job_.topo.rank == 0 ? &timeline_ : nullptr;
    ps->executor = std::make_unique<Executor>(cpu_device_.get(), std::move(planes.backends), tl);
    HVDA_RETURN_IF_ERROR(ps->executor->status());
    const Settings& s = job_.settings;
    ControllerOptions opts;
    opts.process_set_id = id;
    opts.cache_capacity = static_cast<size_t>(s.cache_capacity);
    opts.fusion_threshold_bytes = s.fusion_threshold;
    opts.tunables = tunables_;  // NOTE [Autotune sync]
    opts.drives_autotune = id == 0;
    opts.stall.enabled = !s.stall_check_disable;
    opts.stall.warning_seconds = s.stall_check_seconds;
    opts.stall.shutdown_seconds = s.stall_shutdown_seconds;
    opts.stall.deadlock_seconds = s.deadlock_seconds;
    ps->controller = std::make_unique<Controller>(ps->transport.get(), opts, ranks, log_, tl);
  }
  *out = std::move(ps);
  return Status::OK();
}

Status Generation::DeviceExecutor(ProcessSetState* ps, Executor** out) {
  if (!ps->device_executor) {
    std::string why;
    std::shared_ptr<PluginDevice> device = accel_->device(job_.topo.local_rank, &why);
    if (!device)
      return Status::Precondition("process set " + std::to_string(ps->id) + " runs an accelerator "
                                  "collective, but this rank has no accelerator: " + why);
    CommunicatorSpec spec = ps->comm_spec;
    spec.device = device.get();  // outlives the executor, which shares its ownership
    std::unique_ptr<CollectiveBackend> backend;
    HVDA_RETURN_IF_ERROR(selection_.CreateDeviceBackend(DeviceKind::kPlugin, spec, &backend));
    std::vector<std::unique_ptr<CollectiveBackend>> backends;
    backends.push_back(std::move(backend));
    Timeline* tl = job_.topo.rank == 0 ? &timeline_ : nullptr;
    auto ex = std::make_unique<Executor>(device.get(), std::move(backends), tl);
    HVDA_RETURN_IF_ERROR(ex->status());
    ex->set_output_device(device);
    ex->set_progress_notifier([this] { cycles_.WakeForCompletion(); });
    ps->device_executor = std::move(ex);
  }
  *out = ps->device_executor.get();
  return Status::OK();
}

void Generation::Stop() {
  if (!running_) return;
  running_ = false;
  cycles_.Stop();  // the shutdown cycle, collectively with the other ranks
  {
    std::lock_guard<std::mutex> lock(sets_mu_);
    for (auto& kv : sets_)
      kv.second->queue.FailAll(Status::Aborted("Horovod has been shut down."));
    sets_.clear();
  }
  retired_sets_.clear();  // the background thread has ended
  accel_->EndGeneration();
  timeline_.Stop();
}

Status Generation::StartTimeline(const std::string& path, bool mark_cycles) {
  if (!timeline_allowed_)
    return Status::InvalidArgument("Set " + std::string(setting_env::timeline) +
                                   "=DYNAMIC (or a file name) before hvd.init() to use "
                                   "start_timeline().");
  if (job_.topo.rank != 0) return Status::OK();
  std::string err;
  if (!timeline_.Start(path, mark_cycles, &err)) return Status::InvalidArgument(err);
  return Status::OK();
}

Status Generation::StopTimeline() {
  if (!timeline_allowed_)
    return Status::InvalidArgument("Set " + std::string(setting_env::timeline) +
                                   "=DYNAMIC (or a file name) before hvd.init() to use "
                                   "stop_timeline().");
  timeline_.Stop();
  return Status::OK();
}

std::vector<std::string> Generation::GlobalBackends() {
  std::vector<std::string> out;
  std::lock_guard<std::mutex> lock(sets_mu_);
  auto it = sets_.find(0);
  if (it != sets_.end() && it->second->executor)
    for (const auto& b : it->second->executor->backends()) out.push_back(b->name());
  return out;
}

}  // namespace hvda
