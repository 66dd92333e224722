// The shm backend's copies: streaming copies (devices/cpu/shm_stream_copy.h)
// and the adaptive choice between copy arms (devices/cpu/shm_copy_modes.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "devices/cpu/shm_copy_modes.h"
#include "devices/cpu/shm_stream_copy.h"

namespace hvda {
namespace cpu {
namespace {

// StreamBytes writes exactly [dst, dst + len) with src's bytes, whatever the
// alignment of either pointer and the length (ordinary stores at the edges,
// streaming ones for the whole lines between).
TEST(ShmStreamCopy, CopiesExactlyTheRangeAtEveryAlignment) {
  std::vector<uint8_t> src(8192 + 128), dst(8192 + 256);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 3);
  for (int64_t len : {0, 1, 15, 63, 64, 65, 127, 128, 129, 1000, 8192}) {
    for (int dst_off = 0; dst_off < 64; ++dst_off) {
      for (int src_off : {0, 1, 8, 33}) {
        std::fill(dst.begin(), dst.end(), 0xee);
        uint8_t* d = dst.data() + 64 + dst_off;
        shm::StreamBytes(d, src.data() + src_off, len);
        shm::StoreFence();
        ASSERT_EQ(std::memcmp(d, src.data() + src_off, len), 0) << len << " " << dst_off << " " << src_off;
        for (uint8_t* p = dst.data(); p < d; ++p) ASSERT_EQ(*p, 0xee) << "before, " << len;
        for (uint8_t* p = d + len; p < dst.data() + dst.size(); ++p) ASSERT_EQ(*p, 0xee) << "after, " << len;
      }
    }
  }
  shm::StreamBytes(nullptr, nullptr, 0);  // nothing to copy: pointers untouched
}

// NOTE [Adaptive copies]: measures every arm once, uses the fastest,
// re-measures the others in turn every kExploreEvery operations of a size
// class, and follows the machine when another arm becomes faster.
TEST(ShmCopyModes, UsesTheFastestArmAndReMeasuresTheOthers) {
  using std::chrono::nanoseconds;
  constexpr uint64_t kEvery = shm::CopyModes::kExploreEvery;
  const int64_t mib = 1 << 20;
  shm::CopyModes modes(/*stream_outputs_from=*/8 * mib);
  // Small operations: ordinary copies, never timed.
  for (int i = 0; i < 100; ++i) {
    const auto c = modes.Choose(shm::kAdaptiveMinBytes - 1, true);
    EXPECT_EQ(c.publish, &shm::CopyBytes);
    EXPECT_EQ(c.output, &shm::CopyBytes);
    EXPECT_FALSE(c.record);
  }
  // A fake machine: ns per byte of each arm (bit 0: streamed publishing,
  // bit 1: streamed outputs).
  double cost[4] = {3, 1, 2, 4};
  auto run = [&](int64_t bytes, bool outputs) {
    const auto c = modes.Choose(bytes, outputs);
    EXPECT_EQ(c.publish, c.arm & 1 ? &shm::StreamBytes : &shm::CopyBytes);
    EXPECT_EQ(c.output, c.arm & 2 ? &shm::StreamBytes : &shm::CopyBytes);
    modes.Record(c, bytes, nanoseconds(static_cast<int64_t>(cost[c.arm] * bytes)));
    return c.arm;
  };
  // 1 MiB is below stream_outputs_from: two arms only.
  EXPECT_EQ(run(mib, true), 0);  // warm-up, not measured
  EXPECT_EQ(modes.Estimate(mib, 0), 0);
  EXPECT_EQ(run(mib, true), 0);  // measures each arm once
  EXPECT_EQ(run(mib, true), 1);
  EXPECT_DOUBLE_EQ(modes.Estimate(mib, 0), 3);
  EXPECT_DOUBLE_EQ(modes.Estimate(mib, 1), 1);
  int others = 0;
  for (uint64_t i = 3; i < 3 * kEvery; ++i) {
    const int arm = run(mib, true);
    EXPECT_LT(arm, 2);
    others += arm != 1;
  }
  EXPECT_EQ(others, 3);  // one re-measurement per kExploreEvery
  // 16 MiB may stream its outputs: four arms, each measured, then the
  // fastest (arm 1), with the three others re-measured in turn.
  const int64_t big = 16 * mib;
  EXPECT_EQ(run(big, true), 0);
  for (int a = 0; a < 4; ++a) EXPECT_EQ(run(big, true), a);
  int seen[4] = {0, 0, 0, 0};
  for (uint64_t i = 5; i < 5 + 3 * kEvery; ++i) ++seen[run(big, true)];
  EXPECT_EQ(seen[0] + seen[2] + seen[3], 3);
  EXPECT_EQ(seen[0], 1);
  EXPECT_EQ(seen[2], 1);
  EXPECT_EQ(seen[3], 1);
  // An operation that writes no outputs from the segments (another
  // collective) is offered the two publishing arms only.
  shm::CopyModes gather(8 * mib);
  for (int i = 0; i < 100; ++i) EXPECT_LT(gather.Choose(big, false).arm, 2);
  // The machine changes phase: arm 2 becomes the fastest. The next
  // re-measurement of it replaces the stale estimate, and it takes over.
  cost[2] = 0.5;
  int i = 0;
  while (run(big, true) != 2) ASSERT_LT(++i, static_cast<int>(4 * kEvery)) << "never re-measured";
  EXPECT_DOUBLE_EQ(modes.Estimate(big, 2), 0.5);
  for (int k = 0; k < 10; ++k) EXPECT_EQ(run(big + k, true), 2) << k;
}

}  // namespace
}  // namespace cpu
}  // namespace hvda
