// float16 / bfloat16 <-> float32 conversions, shared by the core (Adasum),
// the host kernels (kernels/reduce_kernels.h) and the vendor plugins. Round to nearest even; NaN stays NaN;
// overflow gives infinity. Where the CPU has F16C (checked at run time, never
// required at build time) float16 bulk conversion uses it; the portable path
// gives bit-identical results. Stateless and thread-safe.
#pragma once

#include <cstdint>

namespace hvda {

float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float BFloat16ToFloat(uint16_t b);
uint16_t FloatToBFloat16(float f);

// Bulk conversions. src and dst must not overlap.
void HalfToFloatN(const uint16_t* src, float* dst, int64_t n);
void FloatToHalfN(const float* src, uint16_t* dst, int64_t n);
void BFloat16ToFloatN(const uint16_t* src, float* dst, int64_t n);
void FloatToBFloat16N(const float* src, uint16_t* dst, int64_t n);

}  // namespace hvda
