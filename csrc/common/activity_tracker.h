// ActivityTracker: what the deadlock detector needs to know about one rank
// (NOTE [Deadlock detection] in coordinator.h): whether a framework thread is
// blocked waiting for a Horovod operation right now, and when this rank last
// did something that can unblock a peer (enqueued an operation, or had one
// completed).
//
// Thread-safe and lock-free: framework threads call BeginWait/EndWait and
// NoteActivity (enqueue); the background thread calls NoteActivity (completion)
// and Stuck. Shared (std::shared_ptr) by the Runtime and every Work it hands
// out, so a Work may outlive the Runtime's generation.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace hvda {

class ActivityTracker {
 public:
  ActivityTracker() { NoteActivity(); }

  void BeginWait() { blocked_.fetch_add(1, std::memory_order_acq_rel); }
  void EndWait() { blocked_.fetch_sub(1, std::memory_order_acq_rel); }
  void NoteActivity() { last_activity_ns_.store(NowNs(), std::memory_order_release); }

  // True if some thread is blocked in a wait now and nothing happened for at
  // least `seconds`. A rank that is computing (no thread waiting) is never
  // stuck, however long it computes.
  bool Stuck(double seconds) const {
    if (blocked_.load(std::memory_order_acquire) <= 0) return false;
    const int64_t idle = NowNs() - last_activity_ns_.load(std::memory_order_acquire);
    return static_cast<double>(idle) >= seconds * 1e9;
  }

 private:
  static int64_t NowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  std::atomic<int> blocked_{0};
  std::atomic<int64_t> last_activity_ns_{0};
};

}  // namespace hvda
