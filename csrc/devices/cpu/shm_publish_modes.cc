#include "devices/cpu/shm_publish_modes.h"

#include <algorithm>

#include "devices/cpu/shm_ranges.h"

namespace hvda {
namespace cpu {
namespace shm {

int PublishModes::SizeClass(int64_t bytes) {
  int log2 = 0;
  while (log2 < 62 && (int64_t{1} << (log2 + 1)) <= bytes) ++log2;
  return std::min(kClasses - 1, std::max(0, log2 - 15));
}

PublishModes::Choice PublishModes::Choose(int64_t bytes) {
  if (bytes < kStreamPublishMinBytes) return {&CopyBytes, -1, false, false, false};
  const int k = SizeClass(bytes);
  SizeClassState& s = classes_[k];
  const uint64_t n = s.ops++;
  bool streamed, record = true, replace;
  if (n < 3) {
    // Op 0 warms up (first touch of buffers) and is not measured; op 1
    // measures ordinary stores, op 2 streaming ones.
    streamed = n == 2;
    record = n > 0;
    replace = true;
  } else {
    const bool best = s.ns_per_byte[1] < s.ns_per_byte[0];
    replace = n % kExploreEvery == kExploreEvery - 1;  // re-measure the other mode
    streamed = replace ? !best : best;
  }
  return {streamed ? &StreamBytes : &CopyBytes, k, streamed, record, replace};
}

void PublishModes::Record(const Choice& c, int64_t bytes, std::chrono::nanoseconds took) {
  if (!c.record || c.size_class < 0 || bytes <= 0) return;
  const double sample = static_cast<double>(took.count()) / static_cast<double>(bytes);
  double& est = classes_[c.size_class].ns_per_byte[c.streamed ? 1 : 0];
  // A re-measured mode's old estimate may be minutes old (another phase of
  // the machine), so the new sample replaces it; the mode in use averages.
  est = c.replace || est == 0 ? sample : 0.75 * est + 0.25 * sample;
}

double PublishModes::Estimate(int64_t bytes, bool streamed) const {
  if (bytes < kStreamPublishMinBytes) return 0;
  return classes_[SizeClass(bytes)].ns_per_byte[streamed ? 1 : 0];
}

}  // namespace shm
}  // namespace cpu
}  // namespace hvda
