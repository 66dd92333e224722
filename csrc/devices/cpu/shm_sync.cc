#include "devices/cpu/shm_sync.h"

#include <immintrin.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>

namespace hvda {
namespace cpu {
namespace {

// Tuned for 2 ranks on 2 cores with other busy threads: a short spin catches
// a peer that is already about to arrive; yielding next lets a descheduled
// peer run; after that, sleep.
constexpr int kSpins = 2000;
constexpr int kYields = 50;
// Longest single futex sleep, so that deadline and liveness are re-checked.
constexpr auto kSleepSlice = std::chrono::milliseconds(100);

bool Reached(uint32_t value, uint32_t count) {
  return static_cast<int32_t>(value - count) >= 0;
}

// The futex word is shared between processes: no FUTEX_PRIVATE_FLAG.
void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::nanoseconds ns) {
  struct timespec ts;
  ts.tv_sec = static_cast<time_t>(ns.count() / 1000000000);
  ts.tv_nsec = static_cast<long>(ns.count() % 1000000000);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

bool ProcessGone(int32_t pid) {
  return pid > 0 && pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH;
}

}  // namespace

void ShmArrive(ShmRankControl* self, uint32_t count) {
  // seq_cst store then load pairs with the sleeper's increment-then-load, so
  // either the sleeper sees the new count or we see the sleeper.
  self->arrived.store(count, std::memory_order_seq_cst);
  if (self->sleepers.load(std::memory_order_seq_cst) != 0) FutexWakeAll(&self->arrived);
}

bool ShmWaitArrived(ShmRankControl* peer, uint32_t count,
                    std::chrono::steady_clock::time_point deadline, bool* peer_died) {
  *peer_died = false;
  for (int i = 0; i < kSpins; ++i) {
    if (Reached(peer->arrived.load(std::memory_order_acquire), count)) return true;
    _mm_pause();
  }
  for (int i = 0; i < kYields; ++i) {
    if (Reached(peer->arrived.load(std::memory_order_acquire), count)) return true;
    sched_yield();
  }
  for (;;) {
    peer->sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t seen = peer->arrived.load(std::memory_order_seq_cst);
    const auto now = std::chrono::steady_clock::now();
    if (!Reached(seen, count) && now < deadline)
      FutexWait(&peer->arrived, seen, std::min<std::chrono::nanoseconds>(kSleepSlice, deadline - now));
    peer->sleepers.fetch_sub(1, std::memory_order_seq_cst);
    if (Reached(peer->arrived.load(std::memory_order_acquire), count)) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    if (ProcessGone(peer->pid.load(std::memory_order_relaxed))) {
      *peer_died = true;
      return false;
    }
  }
}

}  // namespace cpu
}  // namespace hvda
