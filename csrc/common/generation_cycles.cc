// Generation: what one negotiation + execution cycle does over every process
// set of this rank (the CycleHost side; when and on which thread cycles run
// is the CycleLoop's, cycle_loop.h), and how a failure ends the generation.
#include <algorithm>

#include "common/generation.h"

namespace hvda {

namespace {

// Why every op of a generation that a deadlock ended fails (NOTE [A deadlock
// ends the generation] in coordinator.h). The ops that were waiting got the
// "Deadlock detected" error that names what each rank waited for.
constexpr const char* kDeadlockEnded =
    "Horovod's job generation has ended after a detected deadlock (see the \"Deadlock "
    "detected\" error of the operations that were waiting): the ranks were waiting for "
    "different collectives, so their programs are out of step. Every operation fails until "
    "hvd.init() (after hvd.shutdown(), or directly) starts a new generation on every rank, "
    "which brings them back in step.";

// A live set of this rank with requests not yet answered by negotiation.
bool Unanswered(const ProcessSetState& ps) {
  return ps.member() && !ps.removed &&
         (ps.queue.HasNewRequests() || ps.controller->pending() > 0);
}

}  // namespace

bool Generation::Negotiating() {
  std::lock_guard<std::mutex> lock(sets_mu_);
  for (auto& kv : sets_)
    if (Unanswered(*kv.second)) return true;
  return false;
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
bool Generation::CycleWanted(bool* device_busy) {
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
  return wanted || deadlock_end_requested_.load();  // a deadlock's end to announce
}

bool Generation::RunCycle(bool* waiting, bool* progressed, bool* all_idle) {
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
  const double deadlock_seconds = job_.settings.deadlock_seconds;
  bool stuck = deadlock_seconds > 0 && activity_->Stuck(deadlock_seconds);
  for (size_t i = 0; stuck && i < sets.size(); ++i)
    stuck = sets[i]->removed || !sets[i]->controller->has_unsent();
  bool stop = false;
  bool deadlock_end = false;
  std::vector<int64_t> shutdown_ranks;
  for (ProcessSetState* ps : sets) {
    if (ps->removed) continue;
    std::vector<Request> reqs;
    ps->queue.PopNewRequests(&reqs);
    ResponseList list;
    const bool is_global = ps->id == 0;
    Status st = ps->controller->ComputeResponseList(
        std::move(reqs), is_global && cycles_.shutdown_requested(), &list,
        is_global && locally_idle, stuck, is_global && deadlock_end_requested_.load());
    if (is_global) {
      *all_idle = ps->controller->all_idle();
      stuck = ps->controller->all_stuck();
    }
    if (!st.ok()) {
      FailEverything(st);
      return false;
    }
    if (list.deadlock_declared) {
      // NOTE [A deadlock ends the generation] (coordinator.h): before the
      // deadlock errors below wake anyone, the generation is ending (new
      // ops are refused, init() starts the next one: the errors are news of
      // the end, NOTE [Told of the end]). The global set ends it in this
      // cycle, another set in the global set's next one.
      std::lock_guard<std::mutex> lock(failure_mu_);
      end_->Begin();
      ending_ = Status::Aborted(kDeadlockEnded);
      if (!list.deadlock_end) deadlock_end_requested_ = true;
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
      if (st.ok()) st = ps->device_executor->CheckHealth(job_.settings.accel_timeout_seconds);
      if (st.ok()) cycles_.NotePolled();
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
      // Every rank sees the global set's flag in the same cycle. After a
      // deadlock every rank still runs this cycle of its other sets, alike,
      // so their coordinators name what waits there before the end.
      stop = true;
      deadlock_end = list.deadlock_end;
      shutdown_ranks = list.shutdown_ranks;
      if (!deadlock_end) break;
    }
  }
  retired_sets_.clear();
  if (stop) {
    std::string who;
    for (size_t i = 0; i < shutdown_ranks.size(); ++i)
      who += (i ? ", " : "") + std::to_string(shutdown_ranks[i]);
    if (deadlock_end)
      FailEverything(Status::Aborted(kDeadlockEnded));
    else if (who.empty())
      FailEverything(Status::Aborted("Horovod has been shut down by the stall inspector (" +
                                     std::string(setting_env::stall_shutdown_seconds) +
                                     "); check the output of every rank."));
    else
      FailEverything(Status::Aborted(
          "Horovod has been shut down: rank " + who +
          " called hvd.shutdown() (explicitly, at exit, or after an exception), which ends this "
          "job generation and fails its operations. Call hvd.init() to start a new one; check "
          "the output of every rank."));
    return false;
  }
  return true;
}

void Generation::FailEverything(const Status& st) {
  Status failure = st;
  {
    std::lock_guard<std::mutex> lock(failure_mu_);
    end_->Begin();  // before any op fails for it
    if (failure_.ok()) failure_ = st;
    failure = failure_;
  }
  if (st.code() != StatusCode::kAborted || st.reason().find("shut down") == std::string::npos)
    log_->Log(LogLevel::kError, "background loop stopped: " + st.reason());
  std::lock_guard<std::mutex> lock(sets_mu_);
  for (auto& kv : sets_) {
    // Device work of healthy peers finishes in moments; work waiting for a
    // lost peer never does: abort its communicator (NOTE [Accelerator
    // watchdog]) so that no stream stays blocked.
    if (kv.second->device_executor) kv.second->device_executor->DrainOrAbort(2.0, failure);
    kv.second->queue.FailAll(failure);
  }
}

bool Generation::PollDevices() {
  std::vector<ProcessSetState*> sets;
  {
    std::lock_guard<std::mutex> lock(sets_mu_);
    for (auto& kv : sets_)
      if (kv.second->device_executor) sets.push_back(kv.second.get());
  }
  for (ProcessSetState* ps : sets) {
    Status st = ps->device_executor->PollCompletions();
    if (st.ok()) st = ps->device_executor->CheckHealth(job_.settings.accel_timeout_seconds);
    if (!st.ok()) {
      FailEverything(st);
      return false;
    }
  }
  return true;
}

double Generation::CycleTimeMs() { return tunables_->cycle_time_ms(); }

}  // namespace hvda
