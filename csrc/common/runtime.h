// Runtime: lifecycle and wiring of one horovod_accel instance in this
// process. It owns the topology, store, device registry, process sets,
// timeline and the background thread, and connects the pieces that do the
// work: BackendSelection (which backends and control transport a set uses),
// BuildRequest (what an enqueued op must be), Controller (negotiation),
// Executor (running responses), and CycleLoop (when cycles run; what one
// does is this class's CycleHost side, runtime_cycles.cc).
// The core knows no concrete device: the constructor is handed the
// registration functions of the host device (e.g. RegisterCpuDevice).
//
// Thread-safety: Init/Shutdown from one framework thread at a time; Enqueue
// and the queries from any thread. No process-wide mutable state: the
// Python layer holds one default Runtime.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/accelerators.h"
#include "common/activity_tracker.h"
#include "common/autotune/parameter_manager.h"
#include "common/backend_selection.h"
#include "common/cycle_loop.h"
#include "common/generation_end.h"
#include "common/hal/registry.h"
#include "common/message.h"
#include "common/process_set.h"
#include "common/request_builder.h"
#include "common/store/store.h"
#include "common/timeline.h"
#include "common/util/config.h"
#include "common/util/logging.h"
#include "common/work.h"

namespace hvda {

struct Topology {
  int rank = 0, size = 1, local_rank = 0, local_size = 1, cross_rank = 0, cross_size = 1;
  std::vector<std::string> hosts;  // shared-memory domain of every global rank (ThisHost)
};

class Runtime : private CycleHost {
 public:
  // register_devices: adds the host (kCPU) device and its backends to this
  // Runtime's registry (e.g. RegisterCpuDevice); called once, here. The
  // accelerator kind (kPlugin) the Runtime registers itself. Init fails
  // when no kCPU device was registered.
  explicit Runtime(const DeviceRegistrar& register_devices);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Blocks until every rank is connected. static_sets: extra process sets
  // (global ranks). InvalidArgument for bad settings, Aborted for connection
  // failures. A no-op while initialized, also once GenerationEnded(): call
  // Shutdown() first to start the next generation (horovod_accel's init()
  // does).
  // plugin_paths: device plugin libraries to load (HOROVOD_ACCEL_PLUGINS and
  // entry points, resolved by the Python layer); loaded once per process.
  Status Init(const std::vector<std::vector<int>>& static_sets, bool dynamic,
              const std::vector<std::string>& plugin_paths = {});
  // Stops the background thread (collectively with the other ranks) and
  // fails whatever is still queued. Safe to call twice.
  void Shutdown();
  bool initialized() const { return initialized_; }
  // Initialized, but the background loop of this generation has ended (a
  // peer shut down, a peer or the transport failed) or is ending (a deadlock
  // was declared: NOTE [A deadlock ends the generation] in coordinator.h):
  // every op fails until Shutdown() and Init() start the next generation.
  bool GenerationEnded();
  // GenerationEnded(), and this rank's program has been told so: a failure
  // of one of its ops, completed after the end began, was delivered to it
  // (NOTE [Told of the end] in generation_end.h). init() starts the next
  // generation only then.
  bool GenerationEndTold();
  const Topology& topology() const { return topo_; }
  bool IsHomogeneous() const;

  // Validates and enqueues ops atomically (a group when several); never
  // blocks on communication. InvalidArgument describes what is wrong.
  Status Enqueue(std::vector<EnqueueArgs> ops, std::vector<std::shared_ptr<Work>>* works);
  // Enqueue of a single op, without the vectors (the per-op path).
  Status EnqueueOne(EnqueueArgs op, std::shared_ptr<Work>* work);
  std::shared_ptr<Work> EnqueueJoin(int device);
  Status EnqueueBarrier(int process_set_id, std::shared_ptr<Work>* work);
  // For callers that will not Wait on their Works (they take completion
  // callbacks, e.g. TensorFlow's async kernels): starts the background
  // thread's next cycle now instead of at its timer (NOTE [Inline cycles]).
  void RequestProgress() { cycles_.Wake(); }

  // Collective over all ranks; blocks. *id receives the new set's id.
  Status AddProcessSet(std::vector<int> ranks, int* id);
  Status RemoveProcessSet(int id, bool* removed);
  std::vector<int> ProcessSetIds();
  Status ProcessSetRanks(int id, std::vector<int>* ranks);

  Status StartTimeline(const std::string& path, bool mark_cycles);
  Status StopTimeline();

  // Names of the backends in use for the global set (for diagnostics).
  std::vector<std::string> GlobalBackends();

  // This rank's accelerator device_type:index (Accelerators::Bind: the
  // device every accelerator tensor of this rank must then be on), for
  // callers that hold device memory without a framework (the conformance
  // suite's plugin-memory mode). InvalidArgument when not initialized or
  // no plugin serves device_type.
  Status BindAccelerator(const std::string& device_type, int index,
                         std::shared_ptr<PluginDevice>* out);
  // How many collectives the core ran through device_type's plugin since it
  // was loaded, per kind (PluginActivity).
  Status PluginActivityOf(const std::string& device_type,
                          std::vector<std::pair<std::string, uint64_t>>* counts);

 private:
  Status CheckInitialized() const;
  // Explains a failed rendezvous when ranks are at different init()
  // generations (each rank publishes its latest); "" when they agree.
  std::string GenerationSkew();
  Status CreateProcessSet(int id, std::vector<int> ranks, std::unique_ptr<ProcessSetState>* out);
  // The executor of ps for accelerator tensors, created (collectively, at
  // the same response on every member) on first use.
  Status DeviceExecutor(ProcessSetState* ps, Executor** out);
  // Binds this rank's accelerator (Accelerators::Bind) and records, on the
  // framework's stream, the event the communication stream waits for before
  // reading e's input (accelerator tensors).
  Status RecordReady(const EnqueueArgs& a, TensorEntry* e);
  // BuildRequest, then e's buffers, Work and (accelerators) ready event.
  // Moves a's name and shape into e->request when it succeeds.
  Status BuildEntry(EnqueueArgs& a, ProcessSetState* ps, TensorEntry* e);
  Status EnqueueEntries(EnqueueArgs* ops, TensorEntry* entries, size_t n);
  // CycleHost (runtime_cycles.cc): what one cycle does; see cycle_loop.h.
  bool RunCycle(bool* waiting, bool* progressed, bool* all_idle) override;
  bool CycleWanted(bool* device_busy) override;
  bool Negotiating() override;
  bool PollDevices() override;
  double CycleTimeMs() override;
  void HandleProcessSetResponse(const Response& r, ProcessSetState* global);
  // Why this generation's ops fail: failure_ once the loop died, else ending_
  // (OK while the generation lives). Caller holds failure_mu_.
  const Status& EndStatusLocked() const { return failure_.ok() ? ending_ : failure_; }
  void FailEverything(const Status& st);

  Registry registry_;  // filled by the constructor, then read only
  Config config_;
  BackendSelection selection_;  // per Init, over registry_ and config_
  Logger log_;
  Accelerators accel_{&log_};
  double accel_timeout_seconds_ = 0;  // HOROVOD_ACCEL_TIMEOUT_SECONDS
  Topology topo_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Device> cpu_device_;
  // Waits and activity of this rank's framework threads (NOTE [Deadlock
  // detection] in coordinator.h); shared with every Work handed out.
  std::shared_ptr<ActivityTracker> activity_ = std::make_shared<ActivityTracker>();
  double deadlock_seconds_ = 0;  // HOROVOD_DEADLOCK_TIMEOUT_SECONDS
  // The fusion threshold and cycle time in effect, tuned with
  // HOROVOD_AUTOTUNE (docs/design/autotune.md); made per Init, shared with
  // every set's controller, read each cycle (CycleTimeMs).
  std::shared_ptr<ParameterManager> tunables_;
  Timeline timeline_;
  bool timeline_allowed_ = false;
  bool dynamic_sets_ = false;
  int generation_ = 0;  // bumps per Init so store keys never collide
  // Prefix of this generation's store keys and shm segment names: "g<generation_>/",
  // or "e<round>/" in an elastic job, where the launcher numbers the rounds
  // (a new worker and a survivor of earlier rounds have different generation_).
  std::string key_prefix_;
  int next_set_id_ = 1;
  int set_ops_seq_ = 0;  // names of add/remove requests (same order on all ranks)

  std::mutex sets_mu_;  // guards sets_
  std::map<int, std::unique_ptr<ProcessSetState>> sets_;
  // Sets removed during the current cycle (background thread only; emptied
  // when the cycle ends, see HandleProcessSetResponse).
  std::vector<std::unique_ptr<ProcessSetState>> retired_sets_;

  std::atomic<bool> initialized_{false};
  // This generation's end, shared with its Works (made per Init; NOTE [Told
  // of the end]). Begun, under failure_mu_, before failure_ or ending_ is
  // set.
  std::shared_ptr<GenerationEnd> end_ = std::make_shared<GenerationEnd>();
  std::mutex failure_mu_;
  Status failure_;  // set once the background loop died
  // Set when a set of this rank declared a deadlock and the generation will
  // end at the global set's next cycle: new ops fail at once with it (NOTE
  // [A deadlock ends the generation] in coordinator.h). Under failure_mu_.
  Status ending_;
  // The global set's next cycle asks to end the generation for a deadlock.
  // Written by cycles, read by CycleWanted (either may run on a framework
  // thread: NOTE [Inline cycles]); reset per Init.
  std::atomic<bool> deadlock_end_requested_{false};

  // The background thread and who runs cycles when (NOTE [Inline cycles] in
  // cycle_loop.h); started per Init, stopped by Shutdown. Last member:
  // destroyed (stopped) first.
  CycleLoop cycles_{this};
};

}  // namespace hvda
