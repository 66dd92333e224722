// The host reduce and scale kernels (kernels/reduce_kernels.h): integer
// truncation, exact float scaling, upstream's scale-factor contract,
// reduction ops, 16-bit accumulation, output aliasing an input, and the CPU
// features that choose the AVX2 loops (kernels/cpu_features.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/reduce_kernels.h"
#include "float_bits_test_util.h"

namespace hvda {
namespace cpu {
namespace {

using testing::FromBits;

TEST(CpuKernels, ScaleTruncatesIntegersTowardZero) {
  std::vector<int32_t> v = {-7, 7, 5, -5, 0};
  kernels::Scale(v.data(), 5, DataType::kInt32, 0.5);
  EXPECT_EQ(v, (std::vector<int32_t>{-3, 3, 2, -2, 0}));
  std::vector<uint8_t> u = {255, 3};
  kernels::Scale(u.data(), 2, DataType::kUInt8, 1.0 / 3.0);
  EXPECT_EQ(u, (std::vector<uint8_t>{85, 1}));
  std::vector<uint16_t> h = {FloatToHalf(3.0f), FloatToHalf(-1.5f)};
  kernels::Scale(h.data(), 2, DataType::kFloat16, 0.5);
  EXPECT_EQ(HalfToFloat(h[0]), 1.5f);
  EXPECT_EQ(HalfToFloat(h[1]), -0.75f);
  std::vector<double> d = {1.0, 3.0};
  kernels::Scale(d.data(), 2, DataType::kFloat64, 0.25);
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
      kernels::Scale(out.data(), n, DataType::kFloat32, factor);
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
  kernels::Scale(nine.data(), 1, DataType::kFloat32, RoundScaleFactor(DataType::kFloat32, 0.1));
  kernels::Scale(nine.data() + 1, 1, DataType::kFloat32, 0.1);
  EXPECT_EQ(nine[0], 0.90000004f);
  EXPECT_EQ(nine[1], 0.9f);
  // Average over 3 ranks: 5 / 3 correctly rounded (1.6666666f), not
  // 5 * float(1/3) (1.6666667f).
  std::vector<float> five = {5.0f};
  kernels::Scale(five.data(), 1, DataType::kFloat32, PostScaleFactor(DataType::kFloat32, 1.0, true, 3));
  EXPECT_EQ(five[0], 5.0f / 3.0f);
  std::vector<int32_t> ints = {7, -7};
  kernels::Scale(ints.data(), 2, DataType::kInt32, RoundScaleFactor(DataType::kInt32, 0.7231742));
  EXPECT_EQ(ints, (std::vector<int32_t>{5, -5}));
}

TEST(CpuKernels, ReduceOpsAndWrapAround) {
  std::vector<int8_t> a = {100, -3, 5}, b = {100, 4, -6};
  kernels::Reduce2(a.data(), a.data(), b.data(), 3, DataType::kInt8, ReduceOp::kSum);
  EXPECT_EQ(a, (std::vector<int8_t>{-56, 1, -1}));
  std::vector<float> x = {1, 5, -2}, y = {3, 2, -1};
  std::vector<float> out(3);
  kernels::Reduce2(out.data(), x.data(), y.data(), 3, DataType::kFloat32, ReduceOp::kMin);
  EXPECT_EQ(out, (std::vector<float>{1, 2, -2}));
  kernels::Reduce2(out.data(), x.data(), y.data(), 3, DataType::kFloat32, ReduceOp::kMax);
  EXPECT_EQ(out, (std::vector<float>{3, 5, -1}));
  kernels::Reduce2(out.data(), x.data(), y.data(), 3, DataType::kFloat32, ReduceOp::kProduct);
  EXPECT_EQ(out, (std::vector<float>{3, 10, 2}));
  std::vector<int64_t> p = {1, 2}, q = {3, 4}, r = {5, 6};
  const void* srcs[3] = {p.data(), q.data(), r.data()};
  kernels::ReduceN(p.data(), srcs, 3, 2, DataType::kInt64, ReduceOp::kSum);
  EXPECT_EQ(p, (std::vector<int64_t>{9, 12}));
  EXPECT_FALSE(kernels::IsReducible(DataType::kBool, ReduceOp::kSum));
  EXPECT_FALSE(kernels::IsReducible(DataType::kFloat32, ReduceOp::kAverage));
  EXPECT_TRUE(kernels::IsReducible(DataType::kBFloat16, ReduceOp::kProduct));
}

// The scalar definition of each op (wrapping integer arithmetic; Min/Max
// take the first operand unless the second compares strictly smaller or
// larger, which fixes what a NaN gives).
template <typename T>
T Reference(ReduceOp op, T x, T y) {
  using U = typename std::conditional<std::is_integral<T>::value, std::make_unsigned<T>,
                                      std::common_type<T>>::type::type;
  switch (op) {
    case ReduceOp::kSum: return static_cast<T>(static_cast<U>(x) + static_cast<U>(y));
    case ReduceOp::kProduct: return static_cast<T>(static_cast<U>(x) * static_cast<U>(y));
    case ReduceOp::kMin: return y < x ? y : x;
    case ReduceOp::kMax: return x < y ? y : x;
    default: return x;
  }
}

template <typename T>
void CheckAliasing(DataType dtype) {
  // 1031 elements: every vector width's body and a tail.
  const int64_t n = 1031;
  std::mt19937 rng(7);
  std::vector<T> a(n), b(n);
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_integral<T>::value) {
      a[i] = static_cast<T>(rng());
      b[i] = static_cast<T>(rng());
    } else {
      a[i] = static_cast<T>(static_cast<int>(rng() % 2001) - 1000) / T(8);
      b[i] = static_cast<T>(static_cast<int>(rng() % 2001) - 1000) / T(8);
    }
  }
  if constexpr (!std::is_integral<T>::value) {
    a[3] = std::numeric_limits<T>::quiet_NaN();
    b[5] = std::numeric_limits<T>::quiet_NaN();
  }
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProduct, ReduceOp::kMin, ReduceOp::kMax}) {
    std::vector<T> want(n);
    for (int64_t i = 0; i < n; ++i) want[i] = Reference(op, a[i], b[i]);
    std::vector<T> apart(n), into_a = a, into_b = b;
    kernels::Reduce2(apart.data(), a.data(), b.data(), n, dtype, op);
    kernels::Reduce2(into_a.data(), into_a.data(), b.data(), n, dtype, op);
    kernels::Reduce2(into_b.data(), a.data(), into_b.data(), n, dtype, op);
    for (const auto* got : {&apart, &into_a, &into_b}) {
      ASSERT_EQ(0, std::memcmp(got->data(), want.data(), n * sizeof(T)))
          << "dtype " << static_cast<int>(dtype) << ", op " << static_cast<int>(op)
          << (got == &apart ? ", output apart" : got == &into_a ? ", output is a" : ", output is b");
    }
  }
}

TEST(CpuKernels, Reduce2IsExactWhetherTheOutputIsAnInputOrNot) {
  CheckAliasing<uint8_t>(DataType::kUInt8);
  CheckAliasing<int8_t>(DataType::kInt8);
  CheckAliasing<int16_t>(DataType::kInt16);
  CheckAliasing<uint16_t>(DataType::kUInt16);
  CheckAliasing<int32_t>(DataType::kInt32);
  CheckAliasing<int64_t>(DataType::kInt64);
  CheckAliasing<float>(DataType::kFloat32);
  CheckAliasing<double>(DataType::kFloat64);
}

TEST(CpuKernels, CpuFeaturesAgreeWithTheKernel) {
  // Linux lists in /proc/cpuinfo only the features the OS lets programs use
  // (it drops avx2 where it does not save the YMM state).
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line) && line.rfind("flags", 0) != 0) {
  }
  if (line.empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo";
  std::istringstream words(line.substr(line.find(':') + 1));
  bool avx2 = false, f16c = false;
  for (std::string w; words >> w;) {
    avx2 |= w == "avx2";
    f16c |= w == "f16c";
  }
#if defined(__x86_64__)
  EXPECT_EQ(kernels::CpuHasAvx2(), avx2);
  EXPECT_EQ(kernels::CpuHasAvx2F16c(), avx2 && f16c);
#else
  EXPECT_FALSE(kernels::CpuHasAvx2());
#endif
}

TEST(CpuKernels, HalfReduceRoundsOnce) {
  // 1 + 2^-11 is not a half; with float32 accumulation 1 + 2^-11 + 2^-11
  // rounds once to 1 + 2^-10 instead of twice to 1.
  std::vector<uint16_t> a = {FloatToHalf(1.0f)}, b = {FloatToHalf(1.0f / 2048)},
                        c = {FloatToHalf(1.0f / 2048)};
  const void* srcs[3] = {a.data(), b.data(), c.data()};
  kernels::ReduceN(a.data(), srcs, 3, 1, DataType::kFloat16, ReduceOp::kSum);
  EXPECT_EQ(HalfToFloat(a[0]), 1.0f + 1.0f / 1024);
}

}  // namespace
}  // namespace cpu
}  // namespace hvda
