// float16 / bfloat16 <-> float32 conversions (declared in half.h).
//
// The portable float16 path and the F16C path give bit-identical results:
// round to nearest even, overflow to infinity, NaN kept quiet with the top
// mantissa bits. F16C is chosen at run time, so the build never needs -mf16c.
#include <immintrin.h>

#include <cstring>

#include "kernels/cpu_features.h"
#include "kernels/half.h"

namespace hvda {
namespace {

inline uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

inline float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

__attribute__((target("avx2,f16c"))) void HalfToFloatF16C(const uint16_t* src, float* dst,
                                                          int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) dst[i] = HalfToFloat(src[i]);
}

__attribute__((target("avx2,f16c"))) void FloatToHalfF16C(const float* src, uint16_t* dst,
                                                          int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) dst[i] = FloatToHalf(src[i]);
}

// float32 bits -> bfloat16 bits, round to nearest even, NaN kept quiet.
// Branch-free so that loops over it vectorise.
inline uint16_t RoundToBFloat16(uint32_t x) {
  const uint16_t nan = static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint16_t rounded = static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
  return (x & 0x7fffffffu) > 0x7f800000u ? nan : rounded;
}

}  // namespace

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return FromBits(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return FromBits(sign | ((exp + 112) << 23) | (mant << 13));
  // Zero or subnormal: mant * 2^-24 is exact in float32.
  const float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
  return sign ? -v : v;
}

uint16_t FloatToHalf(float f) {
  const uint32_t x = Bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u)  // inf or NaN (NaN stays quiet NaN)
    return sign | 0x7c00u | (ax > 0x7f800000u ? (0x200u | ((ax >> 13) & 0x3ffu)) : 0u);
  if (ax >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: overflow
  if (ax < 0x38800000u) {
    // Below the smallest normal half (2^-14). Adding 0.5f puts the half
    // subnormal ulp (2^-24) at float's last mantissa bit, so the FPU's own
    // round-to-nearest-even produces the half mantissa in the low bits.
    const float v = FromBits(ax) + 0.5f;
    return sign | static_cast<uint16_t>(Bits(v) - Bits(0.5f));
  }
  // Normal: rebias the exponent, then round the 13 dropped bits to even.
  const uint32_t odd = (ax >> 13) & 1u;
  ax += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + odd;
  return sign | static_cast<uint16_t>(ax >> 13);
}

float BFloat16ToFloat(uint16_t b) { return FromBits(static_cast<uint32_t>(b) << 16); }

uint16_t FloatToBFloat16(float f) { return RoundToBFloat16(Bits(f)); }

void HalfToFloatN(const uint16_t* src, float* dst, int64_t n) {
  if (kernels::CpuHasAvx2F16c()) return HalfToFloatF16C(src, dst, n);
  for (int64_t i = 0; i < n; ++i) dst[i] = HalfToFloat(src[i]);
}

void FloatToHalfN(const float* src, uint16_t* dst, int64_t n) {
  if (kernels::CpuHasAvx2F16c()) return FloatToHalfF16C(src, dst, n);
  for (int64_t i = 0; i < n; ++i) dst[i] = FloatToHalf(src[i]);
}

HVDA_AVX2_DISPATCH(BFloat16ToFloatN, (const uint16_t* src, float* dst, int64_t n), (src, dst, n), {
  for (int64_t i = 0; i < n; ++i) dst[i] = FromBits(static_cast<uint32_t>(src[i]) << 16);
})

HVDA_AVX2_DISPATCH(FloatToBFloat16N, (const float* src, uint16_t* dst, int64_t n), (src, dst, n), {
  for (int64_t i = 0; i < n; ++i) dst[i] = RoundToBFloat16(Bits(src[i]));
})

}  // namespace hvda
