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
#include <fstream>
#include <string>

namespace hvda {
namespace cpu {
namespace {

// Tuned for 2 ranks on 2 cores with other busy threads: a short spin catches
// a peer that is already about to arrive; yielding next lets a descheduled
// peer run (and any other thread that wants this CPU); after that, sleep.
//
// NOTE [Wake-up latency]: a sleeping waiter is woken by its peer's
// FUTEX_WAKE, and on a VM whose idle vCPU has halted that takes tens of
// microseconds. A barrier whose waiter slept costs its peer that much, so
// the peer's next wait outlasts a short spin and it sleeps too: once the
// wake-up latency exceeds the spin-and-yield budget, the ranks take turns
// sleeping and every barrier costs a wake-up, and that state is stable. A
// count of yields gave up sooner than a wake-up takes, so the yield phase
// lasts a fixed time, kYieldFor, well above the wake-up latency. Yielding
// costs no other thread its CPU: sched_yield runs whatever else is runnable
// there. The measurements: docs/design/shm_backend.md, "Measurements".
constexpr int kSpins = 2000;  // a short spin: tens of microseconds of PAUSE
constexpr auto kYieldFor = std::chrono::microseconds(250);
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

// NOTE [Shared CPU]: how often a waiter may move itself to another CPU.
constexpr auto kMoveInterval = std::chrono::milliseconds(10);

// Moves the calling thread off `cpu` to another CPU of its affinity mask, and
// gives it its mask back (the thread stays where it was moved until the
// scheduler moves it again). False if the mask has no other CPU or a call
// fails; the mask is unchanged either way.
bool MoveOffCpu(int cpu) {
  cpu_set_t mask;
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0) return false;
  if (!CPU_ISSET(cpu, &mask) || CPU_COUNT(&mask) < 2) return false;
  cpu_set_t others = mask;
  CPU_CLR(cpu, &others);
  if (sched_setaffinity(0, sizeof(others), &others) != 0) return false;
  sched_setaffinity(0, sizeof(mask), &mask);
  return true;
}

// A peer that exited but is not yet reaped by its parent (a zombie) still
// answers kill(pid, 0); its /proc state 'Z' (or 'X') says it is gone.
// Launchers that reap late (a Spark task, a Ray actor, a test driver that
// waits for its children in order) must not cost a survivor the full timeout.
bool ProcessGone(int32_t pid) {
  if (pid <= 0 || pid == getpid()) return false;
  if (kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;  // not visible here: assume alive
  const size_t close = line.rfind(')');  // the command name may contain spaces
  if (close == std::string::npos || close + 2 >= line.size()) return false;
  const char state = line[close + 2];
  return state == 'Z' || state == 'X';
}

}  // namespace

void ShmArrive(ShmRankControl* self, uint32_t count) {
  self->cpu.store(sched_getcpu(), std::memory_order_relaxed);
  // seq_cst store then load pairs with the sleeper's increment-then-load, so
  // either the sleeper sees the new count or we see the sleeper.
  self->arrived.store(count, std::memory_order_seq_cst);
  if (self->sleepers.load(std::memory_order_seq_cst) != 0) FutexWakeAll(&self->arrived);
}

void ShmLeave(ShmRankControl* self) {
  self->left.store(1, std::memory_order_seq_cst);
  // Sleepers wait on `arrived`: wake them whatever its value, so that they
  // look at `left` now.
  FutexWakeAll(&self->arrived);
}

bool ShmWaitArrived(ShmRankControl* peer, uint32_t count,
                    std::chrono::steady_clock::time_point deadline, ShmWaitState* state,
                    ShmPeerGone* gone) {
  *gone = ShmPeerGone::kNo;
  if (Reached(peer->arrived.load(std::memory_order_acquire), count)) return true;
  // NOTE [Shared CPU]: the scheduler sometimes places two ranks' threads on
  // one CPU while another CPU idles. While both spin, nothing changes until
  // the periodic load balancer moves one, tens of milliseconds later; while
  // they sleep in turn, the balancer sees one runnable thread and never
  // moves either, and each wake-up lands on the waker's CPU again (both
  // seen on a 2-vCPU VM, many times slower while co-located:
  // docs/design/shm_backend.md, "Measurements"). So a waiter whose peer last
  // arrived from this very CPU moves itself to another CPU of its affinity
  // mask (at most once per kMoveInterval, so that ranks that outnumber the
  // CPUs are not shuffled around), and otherwise sleeps at once rather than
  // spin on the CPU its peer needs. Only a hint (either thread may have moved
  // since); results never depend on it.
  const int cpu = sched_getcpu();
  bool shared_cpu = cpu >= 0 && peer->cpu.load(std::memory_order_relaxed) == cpu;
  if (shared_cpu) {
    const auto now = std::chrono::steady_clock::now();
    if (now - state->last_move >= kMoveInterval && MoveOffCpu(cpu)) {
      state->last_move = now;
      shared_cpu = false;
      // Else the peer, reading the CPU this rank arrived from, would follow.
      if (state->self != nullptr) state->self->cpu.store(sched_getcpu(), std::memory_order_relaxed);
    }
  }
  for (int i = 0; i < kSpins && !shared_cpu; ++i) {
    if (Reached(peer->arrived.load(std::memory_order_acquire), count)) return true;
    _mm_pause();
  }
  if (!shared_cpu) {
    const auto yield_until = std::chrono::steady_clock::now() + kYieldFor;
    do {
      if (Reached(peer->arrived.load(std::memory_order_acquire), count)) return true;
      sched_yield();
    } while (std::chrono::steady_clock::now() < yield_until);
  }
  for (;;) {
    peer->sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t seen = peer->arrived.load(std::memory_order_seq_cst);
    const auto now = std::chrono::steady_clock::now();
    const bool left = peer->left.load(std::memory_order_seq_cst) != 0;
    if (!Reached(seen, count) && now < deadline && !left)
      FutexWait(&peer->arrived, seen, std::min<std::chrono::nanoseconds>(kSleepSlice, deadline - now));
    peer->sleepers.fetch_sub(1, std::memory_order_seq_cst);
    if (Reached(peer->arrived.load(std::memory_order_acquire), count)) return true;
    if (peer->left.load(std::memory_order_acquire) != 0) {
      *gone = ShmPeerGone::kLeft;
      return false;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    if (ProcessGone(peer->pid.load(std::memory_order_relaxed))) {
      *gone = ShmPeerGone::kDied;
      return false;
    }
  }
}

}  // namespace cpu
}  // namespace hvda
