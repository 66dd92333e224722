// Single-threaded tests of the CPU device: 16-bit float conversion (portable
// path against F16C where present, and against an exact reference), reduce
// and scale kernels, and the host device's memory.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "devices/cpu/host_device.h"
#include "kernels/reduce_kernels.h"
#include "devices/cpu/shm_ranges.h"
#include "devices/cpu/shm_copy_modes.h"
#include "devices/cpu/shm_stream_copy.h"

namespace hvda {
namespace cpu {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Exact reference: the nearest of the two neighbouring representable values
// (computed in double), ties to the even encoding.
uint16_t HalfReference(float f) {
  if (std::isnan(f)) return FloatToHalf(f);
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  if (a >= 65520.0) return sign | 0x7c00;
  uint16_t lo = 0;  // largest non-negative encoding <= a (encodings are monotonic)
  for (int step = 1 << 14; step > 0; step >>= 1)
    if (lo + step < 0x7c00 && HalfToFloat(static_cast<uint16_t>(lo + step)) <= a) lo += step;
  const uint16_t hi = lo + 1;
  const double dlo = a - HalfToFloat(lo), dhi = HalfToFloat(hi) - a;
  uint16_t pick = dlo < dhi ? lo : dhi < dlo ? hi : ((lo & 1) ? hi : lo);
  return sign | pick;
}

TEST(CpuHalf, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_EQ(FloatToHalf(f) & 0x7e00, 0x7e00) << h;
      continue;
    }
    EXPECT_EQ(FloatToHalf(f), h) << std::hex << h;
  }
}

TEST(CpuHalf, PortableMatchesBulkAndReference) {
  std::mt19937 rng(7);
  std::vector<float> in;
  for (float f : {0.f, -0.f, 1.f, 65504.f, 65519.99f, 65520.f, 1e-8f, 2.98e-8f, 2.9802322e-8f,
                  6.1035156e-05f, 6.1e-05f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(), std::nanf("")})
    in.push_back(f);
  // Exact ties between neighbouring halves (1 + k*2^-11) must round to even.
  for (int k = 0; k < 64; ++k) in.push_back(1.0f + static_cast<float>(k) / 2048.0f);
  std::uniform_int_distribution<uint32_t> any;
  std::uniform_real_distribution<float> range(-70000.f, 70000.f);
  for (int i = 0; i < 20000; ++i) in.push_back(FromBits(any(rng)));
  for (int i = 0; i < 20000; ++i) in.push_back(range(rng) * (i % 2 ? 1e-4f : 1.f));
  std::vector<uint16_t> bulk(in.size());
  FloatToHalfN(in.data(), bulk.data(), static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(bulk[i], FloatToHalf(in[i])) << "bulk vs portable for " << in[i];
    if (i < 2000 || i % 16 == 0)
      ASSERT_EQ(FloatToHalf(in[i]), HalfReference(in[i])) << "portable vs reference for " << in[i];
  }
  std::vector<float> back(in.size());
  HalfToFloatN(bulk.data(), back.data(), static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    const float want = HalfToFloat(bulk[i]);
    if (std::isnan(want)) ASSERT_TRUE(std::isnan(back[i]));
    else ASSERT_EQ(Bits(back[i]), Bits(want));
  }
}

TEST(CpuBFloat16, RoundsToNearestEven) {
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3f808000)), 0x3f80);  // tie, even stays
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3f818000)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(FloatToBFloat16(FromBits(0x3f808001)), 0x3f81);
  EXPECT_EQ(FloatToBFloat16(FromBits(0x7f7fffff)), 0x7f80);  // overflow to inf
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(std::nanf("")))));
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> any;
  std::vector<float> in(5000);
  for (auto& f : in) f = FromBits(any(rng));
  std::vector<uint16_t> bulk(in.size());
  FloatToBFloat16N(in.data(), bulk.data(), static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(bulk[i], FloatToBFloat16(in[i]));
}

TEST(CpuKernels, ScaleTruncatesIntegersTowardZero) {
  std::vector<int32_t> v = {-7, 7, 5, -5, 0};
  Scale(v.data(), 5, DataType::kInt32, 0.5);
  EXPECT_EQ(v, (std::vector<int32_t>{-3, 3, 2, -2, 0}));
  std::vector<uint8_t> u = {255, 3};
  Scale(u.data(), 2, DataType::kUInt8, 1.0 / 3.0);
  EXPECT_EQ(u, (std::vector<uint8_t>{85, 1}));
  std::vector<uint16_t> h = {FloatToHalf(3.0f), FloatToHalf(-1.5f)};
  Scale(h.data(), 2, DataType::kFloat16, 0.5);
  EXPECT_EQ(HalfToFloat(h[0]), 1.5f);
  EXPECT_EQ(HalfToFloat(h[1]), -0.75f);
  std::vector<double> d = {1.0, 3.0};
  Scale(d.data(), 2, DataType::kFloat64, 0.25);
  EXPECT_EQ(d, (std::vector<double>{0.25, 0.75}));
}

// NOTE [Exact float scaling]: every float32 factor takes the float multiply,
// others the double one; both must equal rounding the double product once,
// for every kind of value (random bit patterns: subnormals, huge values,
// infinities, NaNs) and lengths that leave vector remainders.
TEST(CpuKernels, Float32ScalingRoundsTheDoubleProductOnce) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> any;
  auto bits = [](float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; };
  for (double factor : {0.5, 0.25, 0.125, 2.0, -0.5, 0x1p-140, 0x1p100, 1.0 / 3.0, 0.1, 1.0 / 6.0}) {
    for (int64_t n : {1, 7, 8, 31, 4099}) {
      std::vector<float> in(static_cast<size_t>(n));
      for (auto& f : in) f = FromBits(any(rng));
      std::vector<float> out = in;
      Scale(out.data(), n, DataType::kFloat32, factor);
      for (int64_t i = 0; i < n; ++i) {
        const float want = static_cast<float>(static_cast<double>(in[i]) * factor);
        if (std::isnan(want)) {
          ASSERT_TRUE(std::isnan(out[i])) << "factor " << factor << " element " << i;
        } else {
          ASSERT_EQ(bits(out[i]), bits(want)) << "factor " << factor << " element " << i
                                              << " input " << in[i];
        }
      }
    }
  }
}

// NOTE [Scaling contract]: a factor the user gave is rounded to the compute
// type first (float32 x 0.1f, as upstream), Average's 1/N alone is not (the
// double product rounded once: x / 3 correctly rounded).
TEST(CpuKernels, ScaleFactorsFollowUpstreamsContract) {
  EXPECT_EQ(RoundScaleFactor(DataType::kFloat32, 0.1), static_cast<double>(0.1f));
  EXPECT_EQ(RoundScaleFactor(DataType::kFloat16, 0.1), static_cast<double>(0.1f));
  EXPECT_EQ(RoundScaleFactor(DataType::kBFloat16, 0.1), static_cast<double>(0.1f));
  EXPECT_EQ(RoundScaleFactor(DataType::kFloat64, 0.1), 0.1);
  EXPECT_EQ(RoundScaleFactor(DataType::kInt32, 0.1), 0.1);
  EXPECT_EQ(PostScaleFactor(DataType::kFloat32, 1.0, true, 3), 1.0 / 3);
  EXPECT_EQ(PostScaleFactor(DataType::kFloat32, 1.0, false, 3), 1.0);
  EXPECT_EQ(PostScaleFactor(DataType::kFloat32, 0.3, true, 3), static_cast<double>(0.1f));
  EXPECT_EQ(PostScaleFactor(DataType::kFloat64, 0.3, true, 3), 0.3 / 3);
  // 9 * 0.1f rounds to 0.90000004f, 9 * 0.1 to 0.9f: the two rules differ here.
  std::vector<float> nine = {9.0f, 9.0f};
  Scale(nine.data(), 1, DataType::kFloat32, RoundScaleFactor(DataType::kFloat32, 0.1));
  Scale(nine.data() + 1, 1, DataType::kFloat32, 0.1);
  EXPECT_EQ(nine[0], 0.90000004f);
  EXPECT_EQ(nine[1], 0.9f);
  // Average over 3 ranks: 5 / 3 correctly rounded (1.6666666f), not
  // 5 * float(1/3) (1.6666667f).
  std::vector<float> five = {5.0f};
  Scale(five.data(), 1, DataType::kFloat32, PostScaleFactor(DataType::kFloat32, 1.0, true, 3));
  EXPECT_EQ(five[0], 5.0f / 3.0f);
  std::vector<int32_t> ints = {7, -7};
  Scale(ints.data(), 2, DataType::kInt32, RoundScaleFactor(DataType::kInt32, 0.7231742));
  EXPECT_EQ(ints, (std::vector<int32_t>{5, -5}));
}

TEST(CpuKernels, ReduceOpsAndWrapAround) {
  std::vector<int8_t> a = {100, -3, 5}, b = {100, 4, -6};
  Reduce2(a.data(), a.data(), b.data(), 3, DataType::kInt8, ReduceOp::kSum);
  EXPECT_EQ(a, (std::vector<int8_t>{-56, 1, -1}));
  std::vector<float> x = {1, 5, -2}, y = {3, 2, -1};
  std::vector<float> out(3);
  Reduce2(out.data(), x.data(), y.data(), 3, DataType::kFloat32, ReduceOp::kMin);
  EXPECT_EQ(out, (std::vector<float>{1, 2, -2}));
  Reduce2(out.data(), x.data(), y.data(), 3, DataType::kFloat32, ReduceOp::kMax);
  EXPECT_EQ(out, (std::vector<float>{3, 5, -1}));
  Reduce2(out.data(), x.data(), y.data(), 3, DataType::kFloat32, ReduceOp::kProduct);
  EXPECT_EQ(out, (std::vector<float>{3, 10, 2}));
  std::vector<int64_t> p = {1, 2}, q = {3, 4}, r = {5, 6};
  const void* srcs[3] = {p.data(), q.data(), r.data()};
  ReduceN(p.data(), srcs, 3, 2, DataType::kInt64, ReduceOp::kSum);
  EXPECT_EQ(p, (std::vector<int64_t>{9, 12}));
  EXPECT_FALSE(IsReducible(DataType::kBool, ReduceOp::kSum));
  EXPECT_FALSE(IsReducible(DataType::kFloat32, ReduceOp::kAverage));
  EXPECT_TRUE(IsReducible(DataType::kBFloat16, ReduceOp::kProduct));
}

TEST(CpuKernels, HalfReduceRoundsOnce) {
  // 1 + 2^-11 is not a half; with float32 accumulation 1 + 2^-11 + 2^-11
  // rounds once to 1 + 2^-10 instead of twice to 1.
  std::vector<uint16_t> a = {FloatToHalf(1.0f)}, b = {FloatToHalf(1.0f / 2048)},
                        c = {FloatToHalf(1.0f / 2048)};
  const void* srcs[3] = {a.data(), b.data(), c.data()};
  ReduceN(a.data(), srcs, 3, 1, DataType::kFloat16, ReduceOp::kSum);
  EXPECT_EQ(HalfToFloat(a[0]), 1.0f + 1.0f / 1024);
}

TEST(CpuHostDevice, AlignedMemoryAndBatchedCopy) {
  HostDevice dev;
  EXPECT_EQ(dev.name(), "cpu");
  void* p = nullptr;
  ASSERT_TRUE(dev.memory().Allocate(100, &p).ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  void* z = nullptr;
  ASSERT_TRUE(dev.memory().Allocate(0, &z).ok());
  EXPECT_NE(z, nullptr);
  ASSERT_TRUE(dev.memory().MemsetAsync(p, 7, 100, nullptr).ok());
  char src[10] = "abcdefghi";
  ASSERT_TRUE(dev.execution().BatchedCopy({{p, src, 4}, {static_cast<char*>(p) + 50, src + 4, 5}}, nullptr).ok());
  EXPECT_EQ(std::memcmp(p, "abcd", 4), 0);
  EXPECT_EQ(static_cast<char*>(p)[4], 7);
  EXPECT_EQ(std::memcmp(static_cast<char*>(p) + 50, "efghi", 5), 0);
  float f[2] = {1, 2}, g[2] = {3, 4};
  ASSERT_TRUE(dev.execution().ReduceInto(f, g, 2, DataType::kFloat32, ReduceOp::kSum, nullptr).ok());
  EXPECT_EQ(f[1], 6.0f);
  EXPECT_FALSE(dev.execution().ReduceInto(f, g, 2, DataType::kBool, ReduceOp::kSum, nullptr).ok());
  dev.memory().Free(p);
  dev.memory().Free(z);
}

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
