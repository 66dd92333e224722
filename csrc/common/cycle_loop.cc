// CycleLoop (cycle_loop.h): the background thread, its pacing, and the
// framework threads that run cycles themselves (NOTE [Inline cycles]).
#include "common/cycle_loop.h"

#include <pthread.h>

#include <algorithm>

#include "common/util/thread_affinity.h"

namespace hvda {

// The WorkDriver every Work of one generation points to (weakly). Owns the
// cycle mutex: whoever runs a cycle (or polls device executors) holds it.
// Detach() (Stop) makes later Drive calls no-ops; a Work keeps only a weak
// pointer, so a handle kept after shutdown never reaches the loop.
class CycleLoop::Driver : public WorkDriver {
 public:
  Driver(CycleLoop* loop, std::weak_ptr<void> owner)
      : owned_(!owner.expired()), owner_(std::move(owner)), loop_(loop) {}

  void Drive(const Work& w, std::chrono::steady_clock::time_point deadline) override {
    // The loop's owner stays alive while this thread drives (a Shutdown on
    // another thread may drop the last other reference meanwhile).
    std::shared_ptr<void> keep = owner_.lock();
    if (owned_ && !keep) return;
    CycleLoop* loop = loop_.load();
    if (loop == nullptr || !loop->options_.inline_cycles) return;
    loop->drivers_.fetch_add(1);
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (loop_.load() != nullptr) loop->DriveLocked(w, deadline);
    }
    loop->drivers_.fetch_sub(1);
    // Negotiated but not complete: the op runs on a device. Take its
    // completion here rather than through the background thread (one
    // thread hand-off less per op).
    if (loop_.load() != nullptr) loop->AwaitDeviceCompletion(w, deadline);
    // Ops of other threads may still wait for negotiation: from here on the
    // background thread runs their cycles. (Device work in flight needs no
    // cycle: its completion notifier wakes the background thread to poll.)
    if (loop_.load() != nullptr && loop->host_->Negotiating()) loop->Wake();
  }

  std::mutex& mu() { return mu_; }

  // Called once the background loop has ended, with no cycle running.
  void Detach() {
    std::lock_guard<std::mutex> lock(mu_);
    loop_.store(nullptr);
  }

 private:
  const bool owned_;  // Start was given an owner
  const std::weak_ptr<void> owner_;
  std::mutex mu_;
  std::atomic<CycleLoop*> loop_;
};

Status CycleLoop::Start(const CycleLoopOptions& options, std::weak_ptr<void> host_owner) {
  options_ = options;
  shutdown_requested_ = false;
  loop_ended_ = false;
  driver_ = std::make_shared<Driver>(this, std::move(host_owner));
  work_driver_ = driver_;
  thread_ = std::thread([this] { BackgroundLoop(); });
  // Named so that top -H, gdb and perf show which thread is Horovod's.
  pthread_setname_np(thread_.native_handle(), "hvd-background");
  if (options_.affinity_core >= 0) return PinThread(thread_, options_.affinity_core);
  return Status::OK();
}

void CycleLoop::Stop() {
  shutdown_requested_ = true;
  Wake();
  if (thread_.joinable()) thread_.join();
  if (driver_) driver_->Detach();  // drivers still inside a cycle finish it first
}

void CycleLoop::Wake() {
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    wake_pending_ = true;
  }
  wake_cv_.notify_one();
}

void CycleLoop::RequestCycle() {
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    wake_pending_ = true;
    cycle_requested_ = true;
  }
  wake_cv_.notify_one();
}

void CycleLoop::NoteEnqueued(OpWaiter waiter) {
  last_enqueue_ns_.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                         std::memory_order_relaxed);
  // NOTE [Inline cycles]: new ops need no wake-up while the background thread
  // keeps its normal pace (it takes them at its next cycle, together, which
  // is what fusion wants; a thread that waits on one drives it at once). Only
  // a thread sleeping in the idle back-off is woken, and with inline cycles
  // off every enqueue wakes it (the eager behaviour). A caller that waits at
  // once (an XLA custom call, one op per jitted call) drives the op itself,
  // so waking the backed-off thread would only cost a futex wake-up and a
  // context switch per op (measured: docs/design/jax.md, "Performance"). Ops
  // nobody waits on are only ever run by the background thread: it starts a
  // cycle for them at once (NOTE [Enqueue bursts]).
  if (waiter == OpWaiter::kNobody) {
    RequestCycle();
  } else if (!options_.inline_cycles) {
    Wake();
  } else if (waiter == OpWaiter::kFramework && backed_off_.load(std::memory_order_acquire)) {
    Wake();
  }
}

// Cycle mutex held. Runs cycles while w waits for negotiation; returns when w
// completed, the deadline passed, the loop ended, or w's op has been
// negotiated and runs on a device (its completion arrives through the
// device executor's notifier and the background thread).
void CycleLoop::DriveLocked(const Work& w, std::chrono::steady_clock::time_point deadline) {
  while (!w.IsCompleted() && !loop_ended_.load() && std::chrono::steady_clock::now() < deadline &&
         host_->Negotiating()) {
    bool waiting = false, progressed = false, all_idle = false;
    if (!host_->RunCycle(&waiting, &progressed, &all_idle)) {
      loop_ended_.store(true);
      Wake();  // the background thread sees the end and exits
      return;
    }
  }
}

// NOTE [Cycle pacing]: a cycle is a collective, so ranks run cycles in
// lockstep. The background thread runs one every HOROVOD_CYCLE_TIME (and a
// framework thread that waits on an op runs them back to back meanwhile,
// NOTE [Inline cycles]). A rank with unanswered requests starts its next
// cycle at once instead: otherwise, when a peer's cycle missed this rank's
// request by a moment, the peer's next cycle would wait a whole cycle time
// for this rank. Ranks that are all waiting on each other without progress
// fall back to the normal pace after kEagerWindow, so a real stall does not
// spin the CPU. Only sets whose negotiation is cheap (a shared-memory control
// transport, microseconds per cycle) pace eagerly: over Gloo's TCP transport
// eager cycles crowd out the ranks' own threads on small hosts. Conversely,
// while *every* rank has nothing in flight (the global set's cycle ANDs an
// idle bit, so all ranks agree), the sleep doubles per idle cycle up to
// 2^kMaxIdleDoublings x HOROVOD_CYCLE_TIME: idle cycles cost the training
// threads CPU time; an enqueue during the back-off wakes the thread
// (NoteEnqueued), so this adds no latency. While a framework thread drives cycles, the
// background thread skips its own. Measurements: docs/design/negotiation.md.
void CycleLoop::BackgroundLoop() {
  constexpr auto kEagerWindow = std::chrono::milliseconds(5);
  constexpr int kMaxIdleDoublings = 4;
  auto last = std::chrono::steady_clock::now();
  auto last_progress = last;
  bool eager = false;
  int idle_cycles = 0;
  while (true) {
    // HOROVOD_CYCLE_TIME, or the value autotune chose (NOTE [Autotune sync]).
    const auto cycle = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double, std::milli>(host_->CycleTimeMs()));
    bool completed = false, cycle_due = true, requested = false;
    {
      std::unique_lock<std::mutex> lock(wake_mu_);
      const auto sleep = cycle * (1 << std::min(idle_cycles, kMaxIdleDoublings));
      if (!eager) {
        backed_off_.store(idle_cycles > 0, std::memory_order_release);
        wake_cv_.wait_until(lock, last + sleep, [&] {
          return wake_pending_ || completion_pending_ || shutdown_requested_.load();
        });
        backed_off_.store(false, std::memory_order_release);
      }
      completed = completion_pending_;
      cycle_due = eager || wake_pending_ || shutdown_requested_ ||
                  std::chrono::steady_clock::now() >= last + sleep;
      requested = cycle_requested_;
      cycle_requested_ = false;
      wake_pending_ = false;
      completion_pending_ = false;
    }
    if (loop_ended_.load()) return;
    // Device work finished: complete it first, without waiting for a
    // negotiation cycle (collective: it would wait for the peers' pace).
    if (completed && !PollDeviceWork()) return;
    if (!cycle_due) continue;
    last = std::chrono::steady_clock::now();
    // A framework thread is running the cycles, or starts to while this
    // rank's ops are still being enqueued (NOTE [Enqueue bursts]).
    if (!shutdown_requested_ &&
        (drivers_.load() > 0 || (!eager && !requested && !AwaitEnqueueLull(last + cycle)))) {
      eager = false;
      continue;
    }
    bool waiting = false, progressed = false, all_idle = false, quiet = false, device_busy = false;
    {
      std::lock_guard<std::mutex> lock(driver_->mu());
      if (loop_ended_.load()) return;
      quiet = !shutdown_requested_ && !host_->CycleWanted(&device_busy);
      if (!quiet && !host_->RunCycle(&waiting, &progressed, &all_idle)) {
        loop_ended_.store(true);
        return;
      }
    }
    if (quiet) {
      // NOTE [Quiet cycles] (generation_cycles.cc): nothing to negotiate here and
      // no peer waiting. The next check backs off like an idle cycle: a
      // tick that finds nothing to do still preempts a training thread on a
      // busy core.
      // An enqueue wakes a backed-off thread, and a peer that waits in a
      // cycle for this rank's op is joined when this rank enqueues it, so
      // only what no local op causes (a peer's shutdown, a stall to detect)
      // is seen up to 16 cycle times later. Not while device work needs
      // polling. Measurements: docs/design/negotiation.md.
      eager = false;
      if (device_busy && !PollDeviceWork()) return;
      idle_cycles = device_busy ? 0 : idle_cycles + 1;
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    if (progressed || !waiting) last_progress = now;
    // Not while this rank's framework threads are enqueueing (NOTE [Enqueue
    // bursts]): they drive the cycles of the ops they wait on, and eager
    // background cycles that keep making progress would keep competing with
    // them for the cycle mutex and the CPU.
    eager = waiting && now - last_progress < kEagerWindow && !InEnqueueBurst();
    idle_cycles = all_idle ? idle_cycles + 1 : 0;
  }
}

// NOTE [Enqueue bursts]: a framework thread often enqueues many ops back to
// back (gradient hooks, a loop of allreduce_async_). A paced cycle that starts
// mid-burst negotiates only the ops enqueued so far, costs every rank one
// more cycle for the rest, and its wait for peers takes CPU from the
// enqueueing threads. So before a paced cycle the background thread waits
// while this rank is inside a burst (latest op less than kEnqueueGap ago),
// until kEnqueueGap after the latest op, for at most one cycle time, and gives
// the tick up if a framework thread starts driving meanwhile (see
// AwaitEnqueueLull). Eager cycles (NOTE [Cycle pacing]) skip this wait, but
// no eager cycle follows another while a burst lasts. So do cycles asked for
// by RequestCycle (ops nobody Waits on: the core C API's enqueue, e.g.
// TensorFlow's graph kernels): a chain of dependent graph ops enqueues one
// op per completion, and a sleep of one gap (stretched by the kernel's
// timer slack) per op was most of its latency (measured:
// docs/design/negotiation.md, "Enqueue bursts"). Only when a cycle
// starts moves; results are unchanged; shutdown is never delayed.
// Measurements: docs/design/negotiation.md.
bool CycleLoop::InEnqueueBurst() const {
  const auto last = std::chrono::steady_clock::time_point(
      std::chrono::steady_clock::duration(last_enqueue_ns_.load(std::memory_order_relaxed)));
  return std::chrono::steady_clock::now() - last < kEnqueueGap;
}

bool CycleLoop::AwaitEnqueueLull(std::chrono::steady_clock::time_point cap) {
  while (true) {
    // The burst is over kEnqueueGap after its latest op: sleep until then,
    // not a fixed poll, so a lone op (a chain of dependent graph ops, each
    // enqueued when the previous completed) waits one gap, not up to three.
    const auto lull = std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(
                          last_enqueue_ns_.load(std::memory_order_relaxed))) +
                      kEnqueueGap;
    const auto now = std::chrono::steady_clock::now();
    if (now >= lull || now >= cap) return true;
    {
      std::unique_lock<std::mutex> lock(wake_mu_);
      if (wake_cv_.wait_until(lock, std::min(lull, cap),
                              [&] { return completion_pending_ || shutdown_requested_.load(); }))
        return true;
    }
    if (drivers_.load() > 0) return false;
  }
}

void CycleLoop::WakeForCompletion() {
  bool waiter;
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    completion_pending_ = true;
    waiter = completion_waiters_ > 0;
  }
  // A framework thread waiting for device work polls it itself
  // (AwaitDeviceCompletion); otherwise the background thread does.
  if (waiter)
    completion_cv_.notify_one();
  else
    wake_cv_.notify_one();
}

void CycleLoop::AwaitDeviceCompletion(const Work& w,
                                      std::chrono::steady_clock::time_point deadline) {
  // A completion the background thread polled (on its own cycle) wakes
  // nobody here, so waits are sliced at the cycle time: a missed signal
  // costs at most that, the usual case none.
  const auto slice = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double, std::milli>(options_.device_wait_slice_ms));
  while (!w.IsCompleted() && !loop_ended_.load()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return;
    bool signalled;
    {
      std::unique_lock<std::mutex> lock(wake_mu_);
      const uint64_t polls = device_polls_;
      ++completion_waiters_;
      completion_cv_.wait_until(lock, std::min(deadline, now + slice), [&] {
        return completion_pending_ || device_polls_ != polls || shutdown_requested_.load();
      });
      --completion_waiters_;
      if (shutdown_requested_) return;
      signalled = completion_pending_;
      completion_pending_ = false;
    }
    if (signalled && !PollDeviceWork()) {
      Wake();  // the loop ended: the background thread exits
      return;
    }
  }
}

bool CycleLoop::PollDeviceWork() {
  std::lock_guard<std::mutex> cycle(driver_->mu());
  if (loop_ended_.load()) return false;
  if (!host_->PollDevices()) {
    loop_ended_.store(true);
    return false;
  }
  NotePolled();
  return true;
}

void CycleLoop::NotePolled() {
  bool waiter;
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    ++device_polls_;
    waiter = completion_waiters_ > 0;
  }
  // A thread in AwaitDeviceCompletion re-checks its Work (it may be the one
  // this poll completed).
  if (waiter) completion_cv_.notify_all();
}

}  // namespace hvda
