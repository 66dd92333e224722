#include "devices/cpu/shm_copy_modes.h"

#include <algorithm>

namespace hvda {
namespace cpu {
namespace shm {

int CopyModes::SizeClass(int64_t bytes) {
  int log2 = 0;
  while (log2 < 62 && (int64_t{1} << (log2 + 1)) <= bytes) ++log2;
  return std::min(kClasses - 1, std::max(0, log2 - 15));
}

int CopyModes::Arms(int k, bool outputs) const {
  // Every operation of class k moves at least 2^(k + 15) bytes.
  return outputs && (int64_t{1} << (k + 15)) >= stream_outputs_from_ ? 4 : 2;
}

CopyModes::Choice CopyModes::Choose(int64_t bytes, bool outputs) {
  if (bytes < kAdaptiveMinBytes) return {&CopyBytes, &CopyBytes, -1, 0, false, false};
  const int k = SizeClass(bytes);
  const int arms = Arms(k, outputs);
  SizeClassState& s = classes_[k];
  const uint64_t n = s.ops++;
  int arm = 0;
  bool record = true, replace = true;
  int best = 0;
  for (int a = 1; a < arms; ++a)
    if (s.ns_per_byte[a] < s.ns_per_byte[best]) best = a;
  int unmeasured = -1;
  for (int a = arms - 1; a >= 0; --a)
    if (s.ns_per_byte[a] == 0) unmeasured = a;
  if (n == 0) {
    record = false;  // warms up (first touch of buffers): not measured
  } else if (unmeasured >= 0) {
    arm = unmeasured;  // each arm measured once first
  } else if (n % kExploreEvery == kExploreEvery - 1) {
    // Re-measure the other arms in turn (skipping the best).
    arm = static_cast<int>((best + 1 + s.explored++ % (arms - 1)) % arms);
  } else {
    arm = best;
    replace = false;
  }
  return {arm & 1 ? &StreamBytes : &CopyBytes, arm & 2 ? &StreamBytes : &CopyBytes, k, arm,
          record, replace};
}

void CopyModes::Record(const Choice& c, int64_t bytes, std::chrono::nanoseconds took) {
  if (!c.record || c.size_class < 0 || bytes <= 0) return;
  // At least a tiny positive value: 0 means "not measured".
  const double sample =
      std::max(1e-9, static_cast<double>(took.count()) / static_cast<double>(bytes));
  double& est = classes_[c.size_class].ns_per_byte[c.arm];
  // A re-measured arm's old estimate may be minutes old (another phase of
  // the machine), so the new sample replaces it; the arm in use averages.
  est = c.replace || est == 0 ? sample : 0.75 * est + 0.25 * sample;
}

double CopyModes::Estimate(int64_t bytes, int arm) const {
  if (bytes < kAdaptiveMinBytes || arm < 0 || arm >= kArms) return 0;
  return classes_[SizeClass(bytes)].ns_per_byte[arm];
}

}  // namespace shm
}  // namespace cpu
}  // namespace hvda
