#include "copy_counts.h"

#include <atomic>
#include <cstdint>

#include "emu_core.h"

namespace hvda_emu {
namespace {

// Indexed as hvda_emu_copy_counts' output. Plain static atomics: constant
// initialised, so never "not yet constructed" and never destroyed while a
// stream worker could still count (the engine's state outlives static
// destruction; see runtime.cc).
std::atomic<uint64_t> counts[4];

}  // namespace

void CountCopy(int kind, size_t n) {
  int base;
  if (kind == kHostToDevice) {
    base = 0;
  } else if (kind == kDeviceToHost) {
    base = 2;
  } else {
    return;
  }
  counts[base].fetch_add(1, std::memory_order_relaxed);
  counts[base + 1].fetch_add(n, std::memory_order_relaxed);
}

}  // namespace hvda_emu

extern "C" void hvda_emu_copy_counts(uint64_t out[4]) {
  for (int i = 0; i < 4; ++i) out[i] = hvda_emu::counts[i].load(std::memory_order_relaxed);
}
