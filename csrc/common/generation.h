// Generation: one job generation of this process, from init() to its end:
// the job (JobSpec: identity, store, settings), the rendezvous store
// connection, the topology, the process sets with their controllers and
// executors, the timeline, autotune, the background thread (CycleLoop) and
// the failure/ending state. Created by Runtime::Init, stopped by
// Runtime::Shutdown; an elastic round or a re-init makes a new one, so
// nothing of one generation can leak into the next.
//
// Ownership and lifetime: shared (std::shared_ptr) between the Runtime,
// which holds the current one, and the framework threads inside one of its
// calls (Runtime hands out a reference for the call's duration) or driving
// its cycles (the CycleLoop's WorkDriver holds a weak reference, locked while
// it drives). Stop() ends it; the object is freed when the last holder lets
// go, on that holder's thread. It borrows the process-lifetime parts of its
// Runtime (Generation::Process), which outlive every generation.
//
// Thread-safety: Start/Stop from one framework thread at a time (the
// Runtime's Init/Shutdown); Enqueue and the queries from any thread.
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
#include "common/job_spec.h"
#include "common/message.h"
#include "common/process_set.h"
#include "common/request_builder.h"
#include "common/store/store.h"
#include "common/timeline.h"
#include "common/util/logging.h"
#include "common/work.h"

namespace hvda {

class Generation : public std::enable_shared_from_this<Generation>, private CycleHost {
 public:
  // What a generation borrows from its Runtime: they live for the process.
  struct Process {
    const Registry* registry = nullptr;  // read only
    Accelerators* accel = nullptr;       // loaded plugins and the bound device
    const Logger* log = nullptr;
    // init() calls of this process so far; Start counts itself in once it
    // passes the checks that fail alike on every rank (so ranks agree on
    // the numbers that name store keys, and GenerationSkew can explain a
    // rendezvous between different ones).
    int* inits = nullptr;
  };
  struct Options {
    std::vector<std::vector<int>> static_sets;  // extra process sets (global ranks)
    bool dynamic_sets = false;                  // init(process_sets="dynamic")
    std::vector<std::string> plugin_paths;      // device plugins to load (once per process)
  };

  // Checks the job, connects to the store, blocks until every rank has
  // joined, creates the process sets and starts the background thread.
  // InvalidArgument for bad settings (before any peer is contacted, so
  // every rank fails alike), Aborted for connection failures.
  static Status Start(const JobSpec& job, const Options& options, const Process& process,
                      std::shared_ptr<Generation>* out);
  ~Generation();
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  // Blocks: the shutdown cycle (collectively with the other ranks), then
  // fails whatever is still queued and unbinds the accelerator. Idempotent.
  void Stop();

  // The background loop of this generation has ended (a peer shut down, a
  // peer or the transport failed) or is ending (a deadlock was declared:
  // NOTE [A deadlock ends the generation] in coordinator.h): every op fails.
  bool Ended();
  // Ended(), and this rank's program has been told so: a failure of one of
  // its ops, completed after the end began, was delivered to it (NOTE [Told
  // of the end] in generation_end.h).
  bool EndTold();
  const Topology& topology() const { return job_.topo; }
  bool IsHomogeneous() const;

  // See Runtime for these.
  Status Enqueue(std::vector<EnqueueArgs> ops, std::vector<std::shared_ptr<Work>>* works,
                 OpWaiter waiter = OpWaiter::kFramework);
  Status EnqueueOne(EnqueueArgs op, std::shared_ptr<Work>* work);
  std::shared_ptr<Work> EnqueueJoin(int device);
  Status EnqueueBarrier(int process_set_id, std::shared_ptr<Work>* work);
  void RequestProgress() { cycles_.RequestCycle(); }
  Status AddProcessSet(std::vector<int> ranks, int* id);
  Status RemoveProcessSet(int id, bool* removed);
  std::vector<int> ProcessSetIds();
  Status ProcessSetRanks(int id, std::vector<int>* ranks);
  Status ProcessSetRank(int id, int* set_rank);
  Status StartTimeline(const std::string& path, bool mark_cycles);
  Status StopTimeline();
  std::vector<std::string> GlobalBackends();

 private:
  Generation(const JobSpec& job, const Process& process);
  // Start's steps, in order.
  Status CheckJob(std::vector<std::vector<int>>* checked_sets, int* affinity_core,
                  const Options& options);
  Status ConnectStore();
  Status Rendezvous();  // publishes this rank's host, waits for every rank's
  Status StartTimelineFromSettings();
  void MakeTunables();
  Status CreateSets(const std::vector<std::vector<int>>& checked_sets);
  Status StartCycles(int affinity_core);

  // Explains a failed rendezvous when ranks are at different init()
  // generations (each rank publishes its latest); "" when they agree.
  std::string GenerationSkew();
  Status CreateProcessSet(int id, std::vector<int> ranks, std::unique_ptr<ProcessSetState>* out);
  // The executor of ps for accelerator tensors, created (collectively, at
  // the same response on every member) on first use.
  Status DeviceExecutor(ProcessSetState* ps, Executor** out);
  // Binds this rank's accelerator (Accelerators::Bind: the device every
  // accelerator tensor of this rank must then be on) and records, on the
  // framework's stream, the event the communication stream waits for before
  // reading e's input (accelerator tensors).
  Status RecordReady(const EnqueueArgs& a, TensorEntry* e);
  // BuildRequest, then e's buffers, Work and (accelerators) ready event.
  // Moves a's name and shape into e->request when it succeeds.
  Status BuildEntry(EnqueueArgs& a, ProcessSetState* ps, TensorEntry* e);
  Status EnqueueEntries(EnqueueArgs* ops, TensorEntry* entries, size_t n,
                        OpWaiter waiter = OpWaiter::kFramework);
  // CycleHost (generation_cycles.cc): what one cycle does; see cycle_loop.h.
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

  const JobSpec job_;
  // Borrowed from the Runtime (Process): they outlive this generation.
  const Registry* const registry_;
  Accelerators* const accel_;
  const Logger* const log_;
  BackendSelection selection_;
  // Shared-memory domain of every global rank (ThisHost in generation.cc).
  std::vector<std::string> hosts_;
  // This generation's number among the init() calls of this process
  // (Process::inits once it was counted).
  int number_ = 0;
  // Prefix of this generation's store keys and shm segment names:
  // "g<number_>/", or "e<round>/" in an elastic job, where the launcher
  // numbers the rounds (a new worker and a survivor of earlier rounds have
  // different number_).
  std::string key_prefix_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Device> cpu_device_;
  // Waits and activity of this rank's framework threads (NOTE [Deadlock
  // detection] in coordinator.h); shared with every Work handed out.
  std::shared_ptr<ActivityTracker> activity_ = std::make_shared<ActivityTracker>();
  // The fusion threshold and cycle time in effect, tuned with
  // HOROVOD_AUTOTUNE (docs/design/autotune.md); shared with every set's
  // controller, read each cycle (CycleTimeMs).
  std::shared_ptr<ParameterManager> tunables_;
  Timeline timeline_;
  bool timeline_allowed_ = false;
  bool dynamic_sets_ = false;
  int next_set_id_ = 1;
  int set_ops_seq_ = 0;  // names of add/remove requests (same order on all ranks)

  std::mutex sets_mu_;  // guards sets_
  std::map<int, std::unique_ptr<ProcessSetState>> sets_;
  // Sets removed during the current cycle (background thread only; emptied
  // when the cycle ends, see HandleProcessSetResponse).
  std::vector<std::unique_ptr<ProcessSetState>> retired_sets_;

  bool running_ = false;  // the background thread runs (Start/Stop thread only)
  // This generation's end, shared with its Works (NOTE [Told of the end]).
  // Begun, under failure_mu_, before failure_ or ending_ is set.
  std::shared_ptr<GenerationEnd> end_ = std::make_shared<GenerationEnd>();
  std::mutex failure_mu_;
  Status failure_;  // set once the background loop died
  // Set when a set of this rank declared a deadlock and the generation will
  // end at the global set's next cycle: new ops fail at once with it (NOTE
  // [A deadlock ends the generation] in coordinator.h). Under failure_mu_.
  Status ending_;
  // The global set's next cycle asks to end the generation for a deadlock.
  // Written by cycles, read by CycleWanted (either may run on a framework
  // thread: NOTE [Inline cycles]).
  std::atomic<bool> deadlock_end_requested_{false};

  // The background thread and who runs cycles when (NOTE [Inline cycles] in
  // cycle_loop.h); started by Start, stopped by Stop. Last member:
  // destroyed (stopped) first.
  CycleLoop cycles_{this};
};

}  // namespace hvda
