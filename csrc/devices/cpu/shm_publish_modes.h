// Which copy the shm backend publishes an operation's data with: ordinary or
// streaming stores (NOTE [Streaming publish] in shm_stream_copy.h), chosen
// from measurements of this communicator's own operations.
//
// NOTE [Adaptive publish]: neither copy is faster everywhere. With both ranks'
// CPUs sharing a cache that hands lines over quickly, ordinary stores win
// from 1 MiB up (peers read the data from the writer's cache); in the VM's
// slow cross-CPU phases, or wherever CPUs do not share a cache, streaming
// stores win by 3-7x at every size from 64 KiB (peers read from memory).
// Measured on one 2-vCPU VM, 2026-11-26, allreduce busbw at np 2 (GB/s,
// ordinary / streamed):
//   normal phase: 64 KiB 4.7 / 5.3, 1 MiB 17.8 / 11.5, 16 MiB 9.3 / 8.1, 64 MiB 9.0 / 6.7;
//   slow phase:   1 MiB ~2.1 / 14.1, 16 MiB ~2.1 / 13.2, 64 MiB ~2.1 / 9.6.
// The phases last minutes and the machine decides them, so the backend keeps,
// per size class (a power of two of the bytes an operation publishes per
// rank), the time per byte of each mode, uses the faster one, and re-measures
// the other every kExploreEvery operations of that class. Every rank runs the
// same operations in the same order, so all ranks re-measure the same
// operation. The choice is local to a rank and only changes speed, never a
// result (either copy writes the same bytes before the same barrier).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

#include "devices/cpu/shm_stream_copy.h"

namespace hvda {
namespace cpu {
namespace shm {

// Operations that publish fewer bytes per rank always use ordinary stores
// (faster cache to cache for small messages in the normal phase) and are
// not timed.
constexpr int64_t kStreamPublishMinBytes = 32 << 10;

class PublishModes {
 public:
  // Every this many operations of a size class, the slower mode runs once.
  static constexpr uint64_t kExploreEvery = 32;

  struct Choice {
    CopyFn copy;
    int size_class;  // -1: below kStreamPublishMinBytes, always ordinary, not measured
    bool streamed;
    bool record;     // the duration updates the estimates
    bool replace;    // a first or re-measured sample: it replaces the estimate
  };

  // The copy for the next operation publishing `bytes` per rank. Not thread
  // safe: one caller at a time (the backend's collectives are serialised).
  Choice Choose(int64_t bytes);
  // Records how long the operation of `c` took, for `bytes` per rank (nothing
  // if `c` is not to be recorded).
  void Record(const Choice& c, int64_t bytes, std::chrono::nanoseconds took);

  // Nanoseconds per byte measured for a mode in the size class of `bytes`
  // (0: not measured yet). For tests.
  double Estimate(int64_t bytes, bool streamed) const;

 private:
  static constexpr int kClasses = 40;  // 2^15 .. 2^54 bytes
  static int SizeClass(int64_t bytes);
  struct SizeClassState {
    double ns_per_byte[2] = {0, 0};  // [streamed]
    uint64_t ops = 0;
  };
  std::array<SizeClassState, kClasses> classes_{};
};

// Publishes one operation: picks its copy on construction and records the
// time until destruction. Borrows `modes`, which must outlive it.
class TimedPublish {
 public:
  TimedPublish(PublishModes* modes, int64_t bytes)
      : modes_(modes), bytes_(bytes), choice_(modes->Choose(bytes)),
        start_(choice_.record ? std::chrono::steady_clock::now()
                              : std::chrono::steady_clock::time_point{}) {}
  ~TimedPublish() {
    if (choice_.record) modes_->Record(choice_, bytes_, std::chrono::steady_clock::now() - start_);
  }
  TimedPublish(const TimedPublish&) = delete;
  TimedPublish& operator=(const TimedPublish&) = delete;

  void operator()(void* dst, const void* src, int64_t len) const { choice_.copy(dst, src, len); }

 private:
  PublishModes* modes_;
  int64_t bytes_;
  PublishModes::Choice choice_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace shm
}  // namespace cpu
}  // namespace hvda
