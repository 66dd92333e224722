// How the shm backend copies an operation's data: into its segment
// (publishing) with ordinary or streaming stores, and, for large allreduces,
// into the caller's outputs with ordinary or streaming stores (NOTE
// [Streaming publish] in shm_stream_copy.h, NOTE [Streamed outputs] in
// shm_reduce.cc), chosen from measurements of this communicator's own
// operations.
//
// NOTE [Adaptive copies]: no choice is fastest everywhere. With both ranks'
// CPUs sharing a cache that hands lines over quickly, ordinary publishing
// wins from 1 MiB up (peers read the data from the writer's cache); in the
// VM's slow cross-CPU phases, or wherever CPUs do not share a cache,
// streaming publishing wins several-fold at every size from 64 KiB (peers
// read from memory). Streamed outputs gain a little at 16-64 MiB in the
// normal phase and lose in the slow one. (The allreduce measurements:
// docs/design/shm_backend.md, "Measurements".)
// The phases last minutes and the machine decides them, so the backend keeps,
// per size class (a power of two of the bytes an operation moves per rank),
// the time per byte of each combination ("arm"), uses the fastest, and
// re-measures another every kExploreEvery operations of that class, in turn.
// Every rank runs the same operations in the same order, so all ranks
// re-measure the same operation. The choice is local to a rank and only
// changes speed, never a result: either copy writes the same bytes, and the
// streaming ones are fenced before a barrier or the end of the operation.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <limits>

#include "devices/cpu/shm_ranges.h"
#include "devices/cpu/shm_stream_copy.h"

namespace hvda {
namespace cpu {
namespace shm {

// Operations that move fewer bytes per rank always use ordinary stores
// (faster cache to cache for small messages in the normal phase) and are
// not timed.
constexpr int64_t kAdaptiveMinBytes = 32 << 10;

class CopyModes {
 public:
  // Every this many operations of a size class, another arm runs once.
  static constexpr uint64_t kExploreEvery = 32;
  // Arms: bit 0 = streamed publishing, bit 1 = streamed outputs.
  static constexpr int kArms = 4;

  struct Choice {
    CopyFn publish;  // into this rank's segment
    CopyFn output;   // from the peers' segments into this rank's outputs
    int size_class;  // -1: below kAdaptiveMinBytes, ordinary, not measured
    int arm;
    bool record;     // the duration updates the estimates
    bool replace;    // a first or re-measured sample: it replaces the estimate
  };

  // `stream_outputs_from`: operations moving at least this many bytes per
  // rank may stream their outputs (the arms with bit 1); below, only the
  // publishing copy is chosen and `output` is ordinary. Collectives that
  // never pass outputs = true keep the default.
  explicit CopyModes(int64_t stream_outputs_from = std::numeric_limits<int64_t>::max())
      : stream_outputs_from_(stream_outputs_from) {}

  // The copies for the next operation moving `bytes` per rank; an operation
  // that copies no outputs out of the segments passes outputs = false.
  // Not thread safe: one caller at a time (the backend's collectives are
  // serialised).
  Choice Choose(int64_t bytes, bool outputs);
  // Records how long the operation of `c` took, for `bytes` per rank
  // (nothing if `c` is not to be recorded).
  void Record(const Choice& c, int64_t bytes, std::chrono::nanoseconds took);

  // Nanoseconds per byte measured for `arm` in the size class of `bytes`
  // (0: not measured yet). For tests.
  double Estimate(int64_t bytes, int arm) const;

 private:
  static constexpr int kClasses = 40;  // 2^15 .. 2^54 bytes
  static int SizeClass(int64_t bytes);
  struct SizeClassState {
    std::array<double, kArms> ns_per_byte{};  // 0: not measured
    uint64_t ops = 0;
    uint64_t explored = 0;  // re-measurements so far: picks the next arm
  };
  // 2 or 4: the arms open to operations of size class k.
  int Arms(int k, bool outputs) const;

  int64_t stream_outputs_from_;
  std::array<SizeClassState, kClasses> classes_{};
};

// Copies of one operation: picks them on construction and records the time
// until destruction. Borrows `modes`, which must outlive it.
class TimedCopies {
 public:
  TimedCopies(CopyModes* modes, int64_t bytes, bool outputs)
      : modes_(modes), bytes_(bytes), choice_(modes->Choose(bytes, outputs)),
        start_(choice_.record ? std::chrono::steady_clock::now()
                              : std::chrono::steady_clock::time_point{}) {}
  ~TimedCopies() {
    if (choice_.record) modes_->Record(choice_, bytes_, std::chrono::steady_clock::now() - start_);
  }
  TimedCopies(const TimedCopies&) = delete;
  TimedCopies& operator=(const TimedCopies&) = delete;

  void Publish(void* dst, const void* src, int64_t len) const { choice_.publish(dst, src, len); }
  void Output(void* dst, const void* src, int64_t len) const { choice_.output(dst, src, len); }
  // Call once the outputs are written: fences streamed outputs, so that
  // whoever the caller hands them to sees them.
  void FinishOutputs() const {
    if (choice_.arm & 2) StoreFence();
  }

 private:
  CopyModes* modes_;
  int64_t bytes_;
  CopyModes::Choice choice_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace shm
}  // namespace cpu
}  // namespace hvda
