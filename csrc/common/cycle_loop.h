// CycleLoop: when negotiation cycles run and on which thread. It owns the
// background thread and its pacing (NOTE [Cycle pacing], [Enqueue bursts],
// in cycle_loop.cc; [Quiet cycles] in generation_cycles.cc), the cycle mutex, the WorkDriver through
// which a framework thread about to block on a Work runs the cycles itself
// (NOTE [Inline cycles]), and the waits for device completions. What a cycle
// does (negotiate and execute every process set) is the CycleHost's: the
// Generation (generation_cycles.cc).
//
// NOTE [Inline cycles]: a framework thread that is about to block on a Work
// whose op still needs negotiation runs the cycles itself (Work::Wait ->
// WorkDriver::Drive) instead of waking the background thread and sleeping
// until it is done: a small op then costs no thread hand-off at all, which
// on hosts with fewer cores than busy threads is most of its latency.
// Cycles stay collective and in one order per rank because whoever runs one
// holds the cycle mutex; the background thread keeps its timer pace for ops
// nobody waits on yet and skips its cycle while a framework thread drives.
// HOROVOD_INLINE_CYCLES=0 turns it off (every enqueue then wakes the
// background thread).
//
// Thread-safety: Start/Stop from one thread at a time (the Generation's
// Start/Stop); everything else from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "common/util/status.h"
#include "common/work.h"

namespace hvda {

// What a cycle does; implemented by the Generation. Methods marked "cycle mutex
// held" are called by the CycleLoop only, under its cycle mutex, so never
// concurrently with each other.
class CycleHost {
 public:
  virtual ~CycleHost() = default;
  // Cycle mutex held. One negotiation + execution cycle over every process
  // set this rank is in (announcing this rank's shutdown once the loop's
  // shutdown_requested()). Returns false when the loop must end (the host
  // has failed every op). *waiting: some request of this rank is still
  // unanswered; *progressed: some response was executed; *all_idle: no rank
  // had anything in flight (NOTE [Cycle pacing]). The host calls
  // NotePolled() after polling device executors.
  virtual bool RunCycle(bool* waiting, bool* progressed, bool* all_idle) = 0;
  // Cycle mutex held: does a cycle have anything to do (NOTE [Quiet
  // cycles])? *device_busy: some device executor has work in flight.
  virtual bool CycleWanted(bool* device_busy) = 0;
  // Any thread: some set of this rank has requests not yet answered.
  virtual bool Negotiating() = 0;
  // Cycle mutex held: polls the device executors' completions and health
  // without a negotiation cycle; false after a failure (the host has failed
  // every op).
  virtual bool PollDevices() = 0;
  // Any thread: the cycle time in effect, in ms (HOROVOD_CYCLE_TIME or the
  // value autotune chose, NOTE [Autotune sync]).
  virtual double CycleTimeMs() = 0;
};

struct CycleLoopOptions {
  bool inline_cycles = true;  // HOROVOD_INLINE_CYCLES
  // The longest a framework thread waits for a device completion before
  // re-checking its Work (a completion polled by the background thread
  // signals nobody): HOROVOD_CYCLE_TIME, at least 0.1 ms.
  double device_wait_slice_ms = 1.0;
  int affinity_core = -1;  // the core the background thread is pinned to; -1: none
};

// Who will wait for an enqueued op (CycleLoop::NoteEnqueued).
enum class OpWaiter {
  kFramework,  // a framework thread may Wait on it later (the Python adapters)
  kCaller,     // the enqueuing thread Waits at once (core C API enqueue_wait)
  kNobody,     // completion by callback only (core C API enqueue)
};

class CycleLoop {
 public:
  // host: borrowed; must outlive this loop.
  explicit CycleLoop(CycleHost* host) : host_(host) {}
  ~CycleLoop() { Stop(); }
  CycleLoop(const CycleLoop&) = delete;
  CycleLoop& operator=(const CycleLoop&) = delete;

  // Starts a generation: a new WorkDriver and the background thread
  // ("hvd-background"). Must not be running. Returns the error of pinning
  // the thread to options.affinity_core (the thread runs regardless).
  // host_owner: the object that owns the host and this loop (a Generation),
  // locked by a framework thread for as long as it drives cycles, so it
  // cannot be freed under the thread; empty: the caller guarantees that
  // the loop outlives every Work (tests).
  Status Start(const CycleLoopOptions& options, std::weak_ptr<void> host_owner = {});
  // Blocks: asks for the shutdown cycle (every rank's cycles end together),
  // joins the background thread and detaches the WorkDriver (framework
  // threads still inside a cycle finish it first; Works kept afterwards no
  // longer drive anything). A no-op when not running.
  void Stop();

  // The driver every Work of this generation points to (weakly); null before
  // the first Start.
  std::shared_ptr<WorkDriver> work_driver() const { return work_driver_; }
  // Starts the background thread's next cycle now instead of at its timer.
  void Wake();
  // Wakes it for a cycle right away, without the enqueue-burst wait (NOTE
  // [Enqueue bursts]): for work nobody will Wait on (core C API callers,
  // whose completion arrives by callback), which no framework thread drives.
  void RequestCycle();
  // After an op was enqueued (NOTE [Enqueue bursts]), by who will wait for
  // it: kFramework wakes the background thread only when it is backed off
  // or inline cycles are off; kCaller not at all (with inline cycles on, the
  // enqueuing thread drives the op's cycles itself); kNobody asks for a
  // cycle at once (RequestCycle).
  void NoteEnqueued(OpWaiter waiter);
  // From a device-runtime thread: in-flight device work may have finished.
  void WakeForCompletion();
  // After the host polled its device executors: wakes the framework threads
  // waiting for a device completion.
  void NotePolled();
  // Stop() has been called (the host's next cycle announces the shutdown).
  bool shutdown_requested() const { return shutdown_requested_.load(); }

 private:
  class Driver;
  void BackgroundLoop();
  // Cycle mutex held. Runs cycles while w waits for negotiation.
  void DriveLocked(const Work& w, std::chrono::steady_clock::time_point deadline);
  // After driving: w's op runs on a device; waits for device completions
  // and polls them on this thread until w completes or the deadline.
  void AwaitDeviceCompletion(const Work& w, std::chrono::steady_clock::time_point deadline);
  // Takes the cycle mutex and polls the host's devices; false when the loop
  // must end.
  bool PollDeviceWork();
  // NOTE [Enqueue bursts]. InEnqueueBurst: the latest op was enqueued less
  // than kEnqueueGap ago. AwaitEnqueueLull (background thread): waits until
  // that is no longer so, `cap` passes, shutdown or a device completion
  // (true: run the cycle), or a framework thread drives the cycles (false:
  // skip it).
  static constexpr std::chrono::microseconds kEnqueueGap{50};
  bool InEnqueueBurst() const;
  bool AwaitEnqueueLull(std::chrono::steady_clock::time_point cap);

  CycleHost* const host_;
  CycleLoopOptions options_;
  std::shared_ptr<Driver> driver_;            // per Start; owns the cycle mutex
  std::shared_ptr<WorkDriver> work_driver_;   // driver_, as every Work sees it
  std::atomic<bool> shutdown_requested_{false};
  std::atomic<int> drivers_{0};           // framework threads inside Drive
  std::atomic<bool> loop_ended_{false};   // this generation's cycles are over
  std::atomic<bool> backed_off_{false};   // background thread in idle back-off
  // steady_clock time (ns since its epoch) of the latest enqueue.
  std::atomic<int64_t> last_enqueue_ns_{0};

  std::mutex wake_mu_;  // guards the fields below
  std::condition_variable wake_cv_;
  bool wake_pending_ = false;
  bool cycle_requested_ = false;  // RequestCycle() since the last cycle
  bool completion_pending_ = false;  // set by WakeForCompletion
  // Framework threads in AwaitDeviceCompletion; they, not the background
  // thread, are told about device completions while there are any.
  int completion_waiters_ = 0;
  uint64_t device_polls_ = 0;  // device executors polled (NotePolled)
  std::condition_variable completion_cv_;
  std::thread thread_;
};

}  // namespace hvda
