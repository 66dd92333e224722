// Byte-range helpers shared by the shm backend's collectives
// (shm_backend.cc, shm_reduce.cc). Header-only, stateless.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace hvda {
namespace cpu {
namespace shm {

// memcpy that tolerates null pointers when there is nothing to copy.
inline void CopyBytes(void* dst, const void* src, int64_t len) {
  if (len > 0) std::memcpy(dst, src, static_cast<size_t>(len));
}

// v limited to [0, hi]: the part of a range that falls into a step.
inline int64_t Clamp(int64_t v, int64_t hi) { return std::max<int64_t>(0, std::min(v, hi)); }

// Exclusive prefix sums: where each rank's part starts.
inline std::vector<int64_t> Offsets(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> off(sizes.size(), 0);
  for (size_t i = 1; i < sizes.size(); ++i) off[i] = off[i - 1] + sizes[i - 1];
  return off;
}

}  // namespace shm
}  // namespace cpu
}  // namespace hvda
