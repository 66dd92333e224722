// Runtime: what lives for the whole process in one horovod_accel instance
// (the device registry, the loaded plugins, the logger plugins log through,
// the count of init() calls) and the current job generation (Generation:
// everything per job, from init() to shutdown or the job's end). init()
// makes a new generation; shutdown stops it; an elastic round or a re-init
// after the end is simply the next generation.
// The core knows no concrete device: the constructor is handed the
// registration functions of the host device (e.g. RegisterCpuDevice).
//
// Thread-safety: Init/Shutdown from one framework thread at a time; Enqueue
// and the queries from any thread (each call holds the generation it found
// for its duration). No process-wide mutable state: the Python layer holds
// one default Runtime.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/accelerators.h"
#include "common/generation.h"
#include "common/hal/registry.h"
#include "common/job_spec.h"
#include "common/util/logging.h"

namespace hvda {

class Runtime {
 public:
  // register_devices: adds the host (kCPU) device and its backends to this
  // Runtime's registry (e.g. RegisterCpuDevice); called once, here. The
  // accelerator kind (kPlugin) the Runtime registers itself. Init fails
  // when no kCPU device was registered.
  explicit Runtime(const DeviceRegistrar& register_devices);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Starts a generation for `job`; blocks until every rank is connected.
  // static_sets: extra process sets (global ranks). dynamic: allow
  // add/remove_process_set. plugin_paths: device plugin libraries to load
  // (resolved by the Python layer); loaded once per process.
  // InvalidArgument for bad settings, Aborted for connection failures. A
  // no-op while initialized, also once GenerationEnded(): call Shutdown()
  // first to start the next generation (horovod_accel's init() does).
  Status Init(const JobSpec& job, const std::vector<std::vector<int>>& static_sets = {},
              bool dynamic = false, const std::vector<std::string>& plugin_paths = {});
  // Stops the current generation (collectively with the other ranks) and
  // fails whatever is still queued. Safe to call twice.
  void Shutdown();
  bool initialized() const { return Current() != nullptr; }
  // Initialized, but the background loop of this generation has ended or is
  // ending (Generation::Ended): every op fails until Shutdown() and Init()
  // start the next generation.
  bool GenerationEnded() const;
  // GenerationEnded(), and this rank's program has been told so
  // (Generation::EndTold). init() starts the next generation only then.
  bool GenerationEndTold() const;
  // The current generation's topology; InvalidArgument when not initialized.
  Status GetTopology(Topology* out) const;
  // False when not initialized.
  bool IsHomogeneous() const;

  // Validates and enqueues ops atomically (a group when several); never
  // blocks on communication. InvalidArgument describes what is wrong.
  // waiter: who will wait for the ops, which decides how the background
  // thread hears of them (CycleLoop::NoteEnqueued, NOTE [Inline cycles]).
  Status Enqueue(std::vector<EnqueueArgs> ops, std::vector<std::shared_ptr<Work>>* works,
                 OpWaiter waiter = OpWaiter::kFramework);
  // Enqueue of a single op, without the vectors (the per-op path).
  Status EnqueueOne(EnqueueArgs op, std::shared_ptr<Work>* work);
  std::shared_ptr<Work> EnqueueJoin(int device);
  Status EnqueueBarrier(int process_set_id, std::shared_ptr<Work>* work);
  // For callers that will not Wait on their Works (they take completion
  // callbacks, e.g. TensorFlow's async kernels): starts the background
  // thread's next cycle now instead of at its timer, without the
  // enqueue-burst wait (NOTE [Inline cycles], [Enqueue bursts]).
  void RequestProgress();

  // Collective over all ranks; blocks. *id receives the new set's id.
  Status AddProcessSet(std::vector<int> ranks, int* id);
  Status RemoveProcessSet(int id, bool* removed);
  std::vector<int> ProcessSetIds();
  Status ProcessSetRanks(int id, std::vector<int>* ranks);
  // This rank's index in set `id`'s ranks; -1 when it is not a member.
  Status ProcessSetRank(int id, int* set_rank);

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
  // The current generation, or null; the caller holds it for its call.
  std::shared_ptr<Generation> Current() const { return std::atomic_load(&current_); }
  // Current(), or InvalidArgument "not initialized".
  Status Initialized(std::shared_ptr<Generation>* out) const;

  Registry registry_;  // filled by the constructor, then read only
  // Plugins log through it for the life of the process; each Init sets its
  // level and rank from the job (before the generation starts).
  Logger log_;
  Accelerators accel_{&log_};
  int inits_ = 0;  // Generation::Process::inits
  // Read with std::atomic_load, replaced with std::atomic_store (Init,
  // Shutdown), so a call on another thread keeps the generation it found.
  std::shared_ptr<Generation> current_;
};

}  // namespace hvda
