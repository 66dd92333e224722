// Element types and reductions of the collective engine (numbering of
// API_SUBSET.md). Half types (float16, bfloat16) are computed in float and
// rounded back after every step; integers wrap. The combination order is the
// caller's: the engine always combines contributions in rank order, on one
// rank per element, so every rank gets bit-identical results.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hvda_emu {

enum DType : int {
  kInt8 = 0, kUint8, kInt32, kUint32, kInt64, kUint64, kFloat16, kFloat32, kFloat64, kBfloat16,
  kNumDTypes
};

enum RedOpKind : int { kSum = 0, kProd = 1, kMax = 2, kMin = 3, kAvg = 4, kPreMulSum = 5 };
constexpr int kNumBuiltinOps = 5;  // PreMulSum ops are numbered from here per communicator

inline bool ValidDType(int t) { return t >= 0 && t < kNumDTypes; }
size_t DTypeSize(int dtype);  // 0 for an invalid type

// A reduction as the engine runs it. scalar holds a PreMulSum factor as a
// value of dtype (its first DTypeSize bytes).
struct Reduction {
  int dtype = kFloat32;
  RedOpKind op = kSum;
  int nranks = 1;
  alignas(8) unsigned char scalar[8] = {};
};

// acc[i] = contribution of rank 0 (scaled for PreMulSum).
void ReduceFirst(const Reduction& r, void* acc, const void* x, size_t count);
// acc[i] = acc[i] (op) x[i], x being the next rank's contribution.
void ReduceNext(const Reduction& r, void* acc, const void* x, size_t count);
// After the last rank: avg divides by nranks; other ops leave acc alone.
void ReduceFinish(const Reduction& r, void* acc, size_t count);

// Conversions used for half types (round to nearest even).
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float Bfloat16ToFloat(uint16_t h);
uint16_t FloatToBfloat16(float f);

}  // namespace hvda_emu
