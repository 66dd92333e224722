// Runtime: the process-lifetime parts and the switch between generations;
// every per-job call is the current Generation's (generation.h).
#include "common/runtime.h"

#include "common/plugin/plugin_device.h"

namespace hvda {
namespace {

constexpr const char* kNotInitialized = "Horovod has not been initialized; call hvd.init() first.";

}  // namespace

Runtime::Runtime(const DeviceRegistrar& register_devices) {
  RegisterPluginDevice(&registry_);
  if (register_devices) register_devices(&registry_);
}

Runtime::~Runtime() { Shutdown(); }

Status Runtime::Initialized(std::shared_ptr<Generation>* out) const {
  *out = Current();
  if (!*out) return Status::InvalidArgument(kNotInitialized);
  return Status::OK();
}

Status Runtime::Init(const JobSpec& job, const std::vector<std::vector<int>>& static_sets,
                     bool dynamic, const std::vector<std::string>& plugin_paths) {
  if (Current()) return Status::OK();
  log_ = Logger(ParseLogLevel(job.settings.log_level), job.settings.log_hide_time, job.topo.rank);
  Generation::Options options;
  options.static_sets = static_sets;
  options.dynamic_sets = dynamic;
  options.plugin_paths = plugin_paths;
  Generation::Process process;
  process.registry = &registry_;
  process.accel = &accel_;
  process.log = &log_;
  process.inits = &inits_;
  std::shared_ptr<Generation> g;
  HVDA_RETURN_IF_ERROR(Generation::Start(job, options, process, &g));
  std::atomic_store(&current_, std::move(g));
  return Status::OK();
}

void Runtime::Shutdown() {
  std::shared_ptr<Generation> g = Current();
  if (!g) return;
  g->Stop();  // still current meanwhile: ops enqueued now fail with the shutdown
  std::atomic_store(&current_, std::shared_ptr<Generation>());
}

bool Runtime::GenerationEnded() const {
  std::shared_ptr<Generation> g = Current();
  return g && g->Ended();
}

bool Runtime::GenerationEndTold() const {
  std::shared_ptr<Generation> g = Current();
  return g && g->EndTold();
}

Status Runtime::GetTopology(Topology* out) const {
  std::shared_ptr<Generation> g;
  HVDA_RETURN_IF_ERROR(Initialized(&g));
  *out = g->topology();
  return Status::OK();
}

bool Runtime::IsHomogeneous() const {
  std::shared_ptr<Generation> g = Current();
  return g && g->IsHomogeneous();
}

Status Runtime::Enqueue(std::vector<EnqueueArgs> ops, std::vector<std::shared_ptr<Work>>* works,
                        OpWaiter waiter) {
  works->clear();
  std::shared_ptr<Generation> g;
  HVDA_RETURN_IF_ERROR(Initialized(&g));
  return g->Enqueue(std::move(ops), works, waiter);
}

Status Runtime::EnqueueOne(EnqueueArgs op, std::shared_ptr<Work>* work) {
  std::shared_ptr<Generation> g;
  HVDA_RETURN_IF_ERROR(Initialized(&g));
  return g->EnqueueOne(std::move(op), work);
}

std::shared_ptr<Work> Runtime::EnqueueJoin(int device) {
  std::shared_ptr<Generation> g = Current();
  if (g) return g->EnqueueJoin(device);
  auto w = std::make_shared<Work>(nullptr);
  w->Complete(Status::InvalidArgument(kNotInitialized));
  return w;
}

Status Runtime::EnqueueBarrier(int process_set_id, std::shared_ptr<Work>* work) {
  std::shared_ptr<Generation> g;
  HVDA_RETURN_IF_ERROR(Initialized(&g));
  return g->EnqueueBarrier(process_set_id, work);
}

void Runtime::RequestProgress() {
  if (std::shared_ptr<Generation> g = Current()) g->RequestProgress();
}

Status Runtime::AddProcessSet(std::vector<int> ranks, int* id) {
  std::shared_ptr<Generation> g;
  HVDA_RETURN_IF_ERROR(Initialized(&g));
  return g->AddProcessSet(std::move(ranks), id);
}

Status Runtime::RemoveProcessSet(int id, bool* removed) {
  std::shared_ptr<Generation> g;
  HVDA_RETURN_IF_ERROR(Initialized(&g));
  return g->RemoveProcessSet(id, removed);
}

std::vector<int> Runtime::ProcessSetIds() {
  std::shared_ptr<Generation> g = Current();
  return g ? g->ProcessSetIds() : std::vector<int>();
}

Status Runtime::ProcessSetRanks(int id, std::vector<int>* ranks) {
  std::shared_ptr<Generation> g;
  HVDA_RETURN_IF_ERROR(Initialized(&g));
  return g->ProcessSetRanks(id, ranks);
}

Status Runtime::ProcessSetRank(int id, int* set_rank) {
  std::shared_ptr<Generation> g;
  HVDA_RETURN_IF_ERROR(Initialized(&g));
  return g->ProcessSetRank(id, set_rank);
}

Status Runtime::StartTimeline(const std::string& path, bool mark_cycles) {
  std::shared_ptr<Generation> g;
  HVDA_RETURN_IF_ERROR(Initialized(&g));
  return g->StartTimeline(path, mark_cycles);
}

Status Runtime::StopTimeline() {
  std::shared_ptr<Generation> g;
  HVDA_RETURN_IF_ERROR(Initialized(&g));
  return g->StopTimeline();
}

std::vector<std::string> Runtime::GlobalBackends() {
  std::shared_ptr<Generation> g = Current();
  return g ? g->GlobalBackends() : std::vector<std::string>();
}

Status Runtime::BindAccelerator(const std::string& device_type, int index,
                                std::shared_ptr<PluginDevice>* out) {
  std::shared_ptr<Generation> g;
  HVDA_RETURN_IF_ERROR(Initialized(&g));
  return accel_.Bind(device_type, index, out);
}

Status Runtime::PluginActivityOf(const std::string& device_type,
                                 std::vector<std::pair<std::string, uint64_t>>* counts) {
  return accel_.Activity(device_type, counts);
}

}  // namespace hvda
