// 16-bit float conversion (kernels/half.h): half (the portable path
// against the bulk one, F16C where present, and an exact reference) and
// bfloat16 rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/half.h"
#include "float_bits_test_util.h"

namespace hvda {
namespace {

using testing::Bits;
using testing::FromBits;

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

}  // namespace
}  // namespace hvda
