// Runtime: the negotiation/execution cycle, and who runs it: the background
// thread (BackgroundLoop) or a framework thread about to block on a Work
// (CycleDriver, NOTE [Inline cycles] in runtime.h).
#include <algorithm>

#include "common/runtime.h"

namespace hvda {

// The WorkDriver every Work of one generation points to (weakly). Owns the
// cycle mutex: whoever runs a cycle (or polls device executors) holds it.
// Detach() (Shutdown) makes later Drive calls no-ops; a Work keeps only a
// weak pointer, so a handle kept after shutdown never reaches the Runtime.
class Runtime::CycleDriver : public WorkDriver {
 public:
  explicit CycleDriver(Runtime* rt) : rt_(rt) {}

  void Drive(const Work& w, std::chrono::steady_clock::time_point deadline) override {
    Runtime* rt = rt_.load();
    if (rt == nullptr || !rt->inline_cycles_) return;
    rt->drivers_.fetch_add(1);
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (rt_.load() != nullptr) rt->DriveLocked(w, deadline);
    }
    rt->drivers_.fetch_sub(1);
    // Negotiated but not complete: the op runs on a device. Take its
    // completion here rather than through the background thread (one
    // thread hand-off less per op).
    if (rt_.load() != nullptr) rt->AwaitDeviceCompletion(w, deadline);
    // Ops of other threads may still wait for negotiation: from here on the
    // background thread runs their cycles. (Device work in flight needs no
    // cycle: its completion notifier wakes the background thread to poll.)
    if (rt_.load() != nullptr && rt->Negotiating()) rt->Wake();
  }

  std::mutex& mu() { return mu_; }

  // Called once the background loop has ended, with no cycle running.
  void Detach() {
    std::lock_guard<std::mutex> lock(mu_);
    rt_.store(nullptr);
  }

 private:
  std::mutex mu_;
  std::atomic<Runtime*> rt_;
};

void Runtime::Wake() {
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    wake_pending_ = true;
  }
  wake_cv_.notify_one();
}

void Runtime::NoteEnqueued() {
  last_enqueue_ns_.store(std::chrono::steady_clock::now().time_since_epoch().count(),
                         std::memory_order_relaxed);
  // NOTE [Inline cycles]: new ops need no wake-up while the background thread
  // keeps its normal pace (it takes them at its next cycle, together, which
  // is what fusion wants; a thread that waits on one drives it at once). Only
  // a thread sleeping in the idle back-off is woken, and with inline cycles
  // off every enqueue wakes it (the eager behaviour).
  if (!inline_cycles_ || backed_off_.load(std::memory_order_acquire)) Wake();
}

namespace {

// A live set of this rank with requests not yet answered by negotiation.
bool Unanswered(const ProcessSetState& ps) {
  return ps.member() && !ps.removed &&
         (ps.queue.HasNewRequests() || ps.controller->pending() > 0);
}

}  // namespace

bool Runtime::Negotiating() {
  std::lock_guard<std::mutex> lock(sets_mu_);
  for (auto& kv : sets_)
    if (Unanswered(*kv.second)) return true;
  return false;
}

// Cycle mutex held. Runs cycles while w waits for negotiation; returns when w
// completed, the deadline passed, the loop ended, or w's op has been
// negotiated and runs on a device (its completion arrives through the
// device executor's notifier and the background thread).
void Runtime::DriveLocked(const Work& w, std::chrono::steady_clock::time_point deadline) {
  while (!w.IsCompleted() && !loop_ended_.load() && std::chrono::steady_clock::now() < deadline &&
         Negotiating()) {
    bool waiting = false, progressed = false, all_idle = false;
    if (!RunCycle(&waiting, &progressed, &all_idle)) {
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
// 2^kMaxIdleDoublings x HOROVOD_CYCLE_TIME: idle cycles cost the training threads CPU
// time; an enqueue during the back-off wakes the thread (NoteEnqueued), so
// this adds no latency. While a framework thread drives cycles, the
// background thread skips its own. Measurements: docs/design/negotiation.md.
void Runtime::BackgroundLoop() {
  constexpr auto kEagerWindow = std::chrono::milliseconds(5);
  constexpr int kMaxIdleDoublings = 4;
  auto last = std::chrono::steady_clock::now();
  auto last_progress = last;
  bool eager = false;
  int idle_cycles = 0;
  while (true) {
    // HOROVOD_CYCLE_TIME, or the value autotune chose (NOTE [Autotune sync]).
    const auto cycle = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double, std::milli>(tunables_->cycle_time_ms()));
    bool completed = false, cycle_due = true;
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
        (drivers_.load() > 0 || (!eager && !AwaitEnqueueLull(last + cycle)))) {
      eager = false;
      continue;
    }
    bool waiting = false, progressed = false, all_idle = false, quiet = false, device_busy = false;
    {
      std::lock_guard<std::mutex> lock(driver_->mu());
      if (loop_ended_.load()) return;
      quiet = !shutdown_requested_ && !CycleWantedLocked(&device_busy);
      if (!quiet && !RunCycle(&waiting, &progressed, &all_idle)) {
        loop_ended_.store(true);
        return;
      }
    }
    if (quiet) {
      // NOTE [Quiet cycles]: nothing to negotiate here and no peer waiting.
      eager = false;
      if (device_busy && !PollDeviceWork()) return;
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
// re-checking at doubling intervals, for at most one cycle time, and gives
// the tick up if a framework thread starts driving meanwhile (see
// AwaitEnqueueLull). Eager cycles (NOTE [Cycle pacing]) skip this wait, but
// no eager cycle follows another while a burst lasts. Only when a cycle
// starts moves; results are unchanged; shutdown is never delayed.
// Measurements: docs/design/negotiation.md.
bool Runtime::InEnqueueBurst() const {
  const auto last = std::chrono::steady_clock::time_point(
      std::chrono::steady_clock::duration(last_enqueue_ns_.load(std::memory_order_relaxed)));
  return std::chrono::steady_clock::now() - last < kEnqueueGap;
}

bool Runtime::AwaitEnqueueLull(std::chrono::steady_clock::time_point cap) {
  auto poll = kEnqueueGap;
  while (InEnqueueBurst()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= cap) return true;
    {
      std::unique_lock<std::mutex> lock(wake_mu_);
      if (wake_cv_.wait_until(lock, std::min(now + poll, cap),
                              [&] { return completion_pending_ || shutdown_requested_.load(); }))
        return true;
    }
    if (drivers_.load() > 0) return false;
    poll *= 2;
  }
  return true;
}

// NOTE [Quiet cycles]: a paced cycle that neither this rank nor any peer
// needs still costs every rank a rendezvous, which on hosts with fewer cores
// than busy threads takes CPU from device streams and training threads. So
// the background thread skips its paced cycle unless this rank has requests
// to negotiate, a host op in flight, device work that only cycles poll, a
// shutdown to announce, or a peer already waits in the next cycle (exact over
// shared memory, where the peer's barrier counter is ahead; transports that
// cannot tell always answer "may wait", keeping the paced cycles there). A
// skipped tick still polls in-flight device work and its health (NOTE
// [Accelerator watchdog]). Latency is unchanged; liveness holds because a
// rank waiting in a cycle is always "ahead" of those that have not entered
// it. A rank with nothing to do notices a dead peer at its next op.
// Measurements: docs/design/negotiation.md.
bool Runtime::CycleWantedLocked(bool* device_busy) {
  std::lock_guard<std::mutex> lock(sets_mu_);
  bool wanted = false;
  for (auto& kv : sets_) {
    ProcessSetState& ps = *kv.second;
    if (ps.device_executor && ps.device_executor->HasInflight()) {
      *device_busy = true;
      wanted |= !ps.device_executor->NotifiesCompletion();  // completions found by cycles
    }
    if (!ps.member() || ps.removed) continue;
    wanted |= Unanswered(ps) || ps.executor->HasInflight() || ps.controller->PeerMayWait();
  }
  return wanted;
}

bool Runtime::RunCycle(bool* waiting, bool* progressed, bool* all_idle) {
  if (timeline_.enabled()) timeline_.MarkCycleStart();
  std::vector<ProcessSetState*> sets;
  bool locally_idle = true;  // nothing in flight in any set of this rank
  {
    std::lock_guard<std::mutex> lock(sets_mu_);
    for (auto& kv : sets_) {
      locally_idle &= kv.second->queue.InFlight() == 0;
      if (kv.second->member()) sets.push_back(kv.second.get());
    }
  }
  // NOTE [Deadlock detection] (coordinator.h): this rank's stuck bit goes
  // into the global set's cycle; the ANDed verdict into every other set's.
  bool stuck = deadlock_seconds_ > 0 && activity_->Stuck(deadlock_seconds_);
  for (size_t i = 0; stuck && i < sets.size(); ++i)
    stuck = sets[i]->removed || !sets[i]->controller->has_unsent();
  bool stop = false;
  std::vector<int64_t> shutdown_ranks;
  for (ProcessSetState* ps : sets) {
    if (ps->removed) continue;
    std::vector<Request> reqs;
    ps->queue.PopNewRequests(&reqs);
    ResponseList list;
    const bool is_global = ps->id == 0;
    Status st = ps->controller->ComputeResponseList(
        std::move(reqs), is_global && shutdown_requested_, &list, is_global && locally_idle,
        stuck);
    if (is_global) {
      *all_idle = ps->controller->all_idle();
      stuck = ps->controller->all_stuck();
    }
    if (!st.ok()) {
      FailEverything(st);
      return false;
    }
    *progressed |= !list.responses.empty();
    for (const Response& r : list.responses) {
      if (r.type == ResponseType::kAddProcessSet || r.type == ResponseType::kRemoveProcessSet) {
        HandleProcessSetResponse(r, ps);
        continue;
      }
      // Errors, joins and barriers only complete Works: the CPU executor.
      const bool on_device = r.device >= 0 && r.type != ResponseType::kError &&
                             r.type != ResponseType::kJoin && r.type != ResponseType::kBarrier;
      Executor* ex = ps->executor.get();
      st = on_device ? DeviceExecutor(ps, &ex) : Status::OK();
      if (st.ok()) st = ex->Execute(r, &ps->queue);
      if (!st.ok()) {
        FailEverything(st);
        return false;
      }
    }
    st = ps->executor->PollCompletions();
    if (st.ok() && ps->device_executor) {
      st = ps->device_executor->PollCompletions();
      if (st.ok()) st = ps->device_executor->CheckHealth(accel_timeout_seconds_);
      if (st.ok()) NotePolled();
    }
    if (!st.ok()) {
      FailEverything(st);
      return false;
    }
    // In-flight device work is awaited through its completion callback
    // (WakeForCompletion); only devices without one need eager cycles.
    *waiting |= (ps->eager_pacing && ps->controller->pending() > 0) || ps->executor->HasInflight() ||
                (ps->device_executor && ps->device_executor->HasInflight() &&
                 !ps->device_executor->NotifiesCompletion());
    if (is_global && list.shutdown) {
      stop = true;
      shutdown_ranks = list.shutdown_ranks;
      break;  // every rank sees the global set's flag in the same cycle
    }
  }
  retired_sets_.clear();
  if (stop) {
    std::string who;
    for (size_t i = 0; i < shutdown_ranks.size(); ++i)
      who += (i ? ", " : "") + std::to_string(shutdown_ranks[i]);
    FailEverything(Status::Aborted(
        who.empty()
            ? "Horovod has been shut down by the stall inspector "
              "(HOROVOD_STALL_SHUTDOWN_TIME_SECONDS); check the output of every rank."
            : "Horovod has been shut down: rank " + who +
                  " called hvd.shutdown() (explicitly, at exit, or after an exception), which "
                  "ends this job generation and fails its operations. Call hvd.init() to start "
                  "a new one; check the output of every rank."));
    return false;
  }
  return true;
}

void Runtime::FailEverything(const Status& st) {
  Status failure = st;
  {
    std::lock_guard<std::mutex> lock(failure_mu_);
    if (failure_.ok()) failure_ = st;
    failure = failure_;
  }
  if (st.code() != StatusCode::kAborted || st.reason().find("shut down") == std::string::npos)
    log_.Log(LogLevel::kError, "background loop stopped: " + st.reason());
  std::lock_guard<std::mutex> lock(sets_mu_);
  for (auto& kv : sets_) {
    // Device work of healthy peers finishes in moments; work waiting for a
    // lost peer never does: abort its communicator (NOTE [Accelerator
    // watchdog]) so that no stream stays blocked.
    if (kv.second->device_executor) kv.second->device_executor->DrainOrAbort(2.0, failure);
    kv.second->queue.FailAll(failure);
  }
}

void Runtime::WakeForCompletion() {
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

void Runtime::AwaitDeviceCompletion(const Work& w, std::chrono::steady_clock::time_point deadline) {
  // A completion the background thread polled (on its own cycle) wakes
  // nobody here, so waits are sliced at the cycle time: a missed signal
  // costs at most that, the usual case none.
  const auto slice = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double, std::milli>(std::max(0.1, config_.GetFloat("HOROVOD_CYCLE_TIME"))));
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

bool Runtime::PollDeviceWork() {
  std::lock_guard<std::mutex> cycle(driver_->mu());
  if (loop_ended_.load()) return false;
  std::vector<ProcessSetState*> sets;
  {
    std::lock_guard<std::mutex> lock(sets_mu_);
    for (auto& kv : sets_)
      if (kv.second->device_executor) sets.push_back(kv.second.get());
  }
  for (ProcessSetState* ps : sets) {
    Status st = ps->device_executor->PollCompletions();
    if (st.ok()) st = ps->device_executor->CheckHealth(accel_timeout_seconds_);
    if (!st.ok()) {
      FailEverything(st);
      loop_ended_.store(true);
      return false;
    }
  }
  NotePolled();
  return true;
}

void Runtime::NotePolled() {
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

std::shared_ptr<WorkDriver> Runtime::NewCycleDriver() {
  driver_ = std::make_shared<CycleDriver>(this);
  work_driver_ = driver_;
  return work_driver_;
}

void Runtime::DetachCycleDriver() {
  if (driver_) driver_->Detach();
}

}  // namespace hvda
