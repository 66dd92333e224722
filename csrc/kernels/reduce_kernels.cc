// Elementwise reduce and scale kernels over host memory.
//
// Every typed loop is a plain indexed loop over an always-inline body, wrapped
// in one function per dtype compiled twice (AVX2 and baseline) and chosen by
// the CPU's features at run time (HVDA_AVX2_DISPATCH, kernels/cpu_features.h),
// so -O3 vectorises both and the build needs no -mavx2. 16-bit floats go
// through float32 in L1-sized blocks.
#include "kernels/reduce_kernels.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/cpu_features.h"

#define HVDA_INLINE inline __attribute__((always_inline))
#define HVDA_INLINE_LAMBDA __attribute__((always_inline))

namespace hvda {
namespace kernels {
namespace {

// Integer arithmetic is done in the unsigned type so that overflow wraps
// (two's complement) instead of being undefined.
template <typename T>
using Arith = typename std::conditional<std::is_integral<T>::value,
                                        std::make_unsigned<T>, std::common_type<T>>::type::type;

// d[i] = f(a[i], b[i]), where d may be a or b exactly (the common case: an
// accumulator folded in place, acc = acc op peer). Those two cases get loops
// whose pointers are declared not to alias: clang's vectoriser otherwise
// guards the loop with an overlap check that an exact alias fails, and runs
// it scalar (GCC's check admits distance 0; measured in docs/design/packaging.md).
// Other overlaps take the plain loop, which the compilers guard themselves.
template <typename T, typename F>
HVDA_INLINE void IntoFirst(T* __restrict d, const T* __restrict b, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) d[i] = f(d[i], b[i]);
}

template <typename T, typename F>
HVDA_INLINE void IntoSecond(T* __restrict d, const T* __restrict a, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) d[i] = f(a[i], d[i]);
}

template <typename T, typename F>
HVDA_INLINE void Elementwise(T* d, const T* a, const T* b, int64_t n, F f) {
  if (d == a) return IntoFirst(d, b, n, f);
  if (d == b) return IntoSecond(d, a, n, f);
  for (int64_t i = 0; i < n; ++i) d[i] = f(a[i], b[i]);
}

template <typename T>
HVDA_INLINE void Reduce2Body(T* d, const T* a, const T* b, int64_t n, ReduceOp op) {
  using A = Arith<T>;
  switch (op) {
    case ReduceOp::kSum:
      return Elementwise(d, a, b, n, [](T x, T y) HVDA_INLINE_LAMBDA {
        return static_cast<T>(static_cast<A>(x) + static_cast<A>(y));
      });
    case ReduceOp::kProduct:
      return Elementwise(d, a, b, n, [](T x, T y) HVDA_INLINE_LAMBDA {
        return static_cast<T>(static_cast<A>(x) * static_cast<A>(y));
      });
    case ReduceOp::kMin:
      return Elementwise(d, a, b, n, [](T x, T y) HVDA_INLINE_LAMBDA { return y < x ? y : x; });
    case ReduceOp::kMax:
      return Elementwise(d, a, b, n, [](T x, T y) HVDA_INLINE_LAMBDA { return x < y ? y : x; });
    default:
      return;
  }
}

// NOTE [Exact float scaling]: data times a double factor is computed in
// double and rounded once to the element type. Factors the user gave arrive
// rounded to float already for float32 data (NOTE [Scaling contract] in
// common/dtype.h), and so does 1 / N for power-of-two N: for a factor that
// is exactly a float, the product of two floats has at most 48 significant
// bits and is exact in double, so rounding it to float is what a float
// multiply does (IEEE rounds the exact product once, overflow and subnormals
// included): the float multiply gives bit-identical results without
// widening every element.
template <typename T>
HVDA_INLINE void ScaleBody(T* buf, int64_t n, double factor) {
  if constexpr (std::is_same<T, float>::value) {
    const float f = static_cast<float>(factor);
    if (static_cast<double>(f) == factor) {
      for (int64_t i = 0; i < n; ++i) buf[i] *= f;
      return;
    }
  }
  for (int64_t i = 0; i < n; ++i) buf[i] = static_cast<T>(static_cast<double>(buf[i]) * factor);
}

#define HVDA_DEFINE_TYPED(SUFFIX, T)                                                  \
  HVDA_AVX2_DISPATCH(Reduce2_##SUFFIX, (T * d, const T* a, const T* b, int64_t n, ReduceOp op), \
                     (d, a, b, n, op), { Reduce2Body<T>(d, a, b, n, op); })                 \
  HVDA_AVX2_DISPATCH(Scale_##SUFFIX, (T * buf, int64_t n, double f), (buf, n, f),          \
                     { ScaleBody<T>(buf, n, f); })

HVDA_DEFINE_TYPED(u8, uint8_t)
HVDA_DEFINE_TYPED(i8, int8_t)
HVDA_DEFINE_TYPED(i16, int16_t)
HVDA_DEFINE_TYPED(u16, uint16_t)
HVDA_DEFINE_TYPED(i32, int32_t)
HVDA_DEFINE_TYPED(i64, int64_t)
HVDA_DEFINE_TYPED(f32, float)
HVDA_DEFINE_TYPED(f64, double)
#undef HVDA_DEFINE_TYPED

HVDA_AVX2_DISPATCH(ScaleFloatBlock, (float* buf, int64_t n, float f), (buf, n, f), {
  for (int64_t i = 0; i < n; ++i) buf[i] *= f;
})

// Elements per float32 staging block for 16-bit floats (2 x 8 KiB on the stack).
constexpr int64_t kBlock = 2048;

void ToFloat(DataType t, const void* src, float* dst, int64_t n) {
  if (t == DataType::kFloat16) HalfToFloatN(static_cast<const uint16_t*>(src), dst, n);
  else BFloat16ToFloatN(static_cast<const uint16_t*>(src), dst, n);
}

void FromFloat(DataType t, const float* src, void* dst, int64_t n) {
  if (t == DataType::kFloat16) FloatToHalfN(src, static_cast<uint16_t*>(dst), n);
  else FloatToBFloat16N(src, static_cast<uint16_t*>(dst), n);
}

// 16-bit float ReduceN: every source of a block is read before the block of
// dst is written, so dst may alias any source exactly.
void ReduceN16(uint16_t* dst, const void* const* srcs, int n, int64_t count, DataType t,
               ReduceOp op) {
  alignas(64) float acc[kBlock];
  alignas(64) float tmp[kBlock];
  for (int64_t off = 0; off < count; off += kBlock) {
    const int64_t len = std::min(kBlock, count - off);
    ToFloat(t, static_cast<const uint16_t*>(srcs[0]) + off, acc, len);
    for (int k = 1; k < n; ++k) {
      ToFloat(t, static_cast<const uint16_t*>(srcs[k]) + off, tmp, len);
      Reduce2_f32(acc, acc, tmp, len, op);
    }
    FromFloat(t, acc, dst + off, len);
  }
}

void Reduce2Typed(void* d, const void* a, const void* b, int64_t n, DataType t, ReduceOp op) {
  switch (t) {
#define HVDA_CASE(DT, SUFFIX, T)                                                       \
  case DataType::DT:                                                                   \
    return Reduce2_##SUFFIX(static_cast<T*>(d), static_cast<const T*>(a),              \
                            static_cast<const T*>(b), n, op);
    HVDA_CASE(kUInt8, u8, uint8_t)
    HVDA_CASE(kInt8, i8, int8_t)
    HVDA_CASE(kInt16, i16, int16_t)
    HVDA_CASE(kUInt16, u16, uint16_t)
    HVDA_CASE(kInt32, i32, int32_t)
    HVDA_CASE(kInt64, i64, int64_t)
    HVDA_CASE(kFloat32, f32, float)
    HVDA_CASE(kFloat64, f64, double)
#undef HVDA_CASE
    default:
      return;
  }
}

bool Is16BitFloat(DataType t) { return t == DataType::kFloat16 || t == DataType::kBFloat16; }

}  // namespace

bool IsReducible(DataType dtype, ReduceOp op) {
  if (dtype == DataType::kBool || !IsValidDataType(static_cast<int32_t>(dtype))) return false;
  return op == ReduceOp::kSum || op == ReduceOp::kMin || op == ReduceOp::kMax ||
         op == ReduceOp::kProduct;
}

void Reduce2(void* dst, const void* a, const void* b, int64_t count, DataType dtype,
             ReduceOp op) {
  if (count <= 0) return;
  if (Is16BitFloat(dtype)) {
    const void* srcs[2] = {a, b};
    return ReduceN16(static_cast<uint16_t*>(dst), srcs, 2, count, dtype, op);
  }
  Reduce2Typed(dst, a, b, count, dtype, op);
}

void ReduceN(void* dst, const void* const* srcs, int n, int64_t count, DataType dtype,
             ReduceOp op) {
  if (count <= 0 || n <= 0) return;
  if (Is16BitFloat(dtype)) return ReduceN16(static_cast<uint16_t*>(dst), srcs, n, count, dtype, op);
  const size_t esize = DataTypeSize(dtype);
  if (n == 1) {
    if (dst != srcs[0]) std::memmove(dst, srcs[0], count * esize);
    return;
  }
  if (n == 2) return Reduce2Typed(dst, srcs[0], srcs[1], count, dtype, op);
  // Folding sources 2.. into dst would read back results if dst is one of
  // them; then each block is folded in a stack buffer and copied out.
  bool dst_is_late_source = false;
  for (int k = 2; k < n; ++k) dst_is_late_source |= srcs[k] == dst;
  // Block-wise so that the partial result stays in L1 while later sources
  // are folded in.
  alignas(64) char tmp[16384];
  const int64_t block = std::max<int64_t>(1, static_cast<int64_t>(sizeof(tmp) / esize));
  char* d = static_cast<char*>(dst);
  for (int64_t off = 0; off < count; off += block) {
    const int64_t len = std::min(block, count - off);
    const size_t boff = off * esize;
    char* acc = dst_is_late_source ? tmp : d + boff;
    Reduce2Typed(acc, static_cast<const char*>(srcs[0]) + boff,
                 static_cast<const char*>(srcs[1]) + boff, len, dtype, op);
    for (int k = 2; k < n; ++k)
      Reduce2Typed(acc, acc, static_cast<const char*>(srcs[k]) + boff, len, dtype, op);
    if (dst_is_late_source) std::memcpy(d + boff, tmp, len * esize);
  }
}

void Scale(void* buf, int64_t count, DataType dtype, double factor) {
  if (count <= 0 || factor == 1.0) return;
  switch (dtype) {
    case DataType::kUInt8: return Scale_u8(static_cast<uint8_t*>(buf), count, factor);
    case DataType::kInt8: return Scale_i8(static_cast<int8_t*>(buf), count, factor);
    case DataType::kInt16: return Scale_i16(static_cast<int16_t*>(buf), count, factor);
    case DataType::kUInt16: return Scale_u16(static_cast<uint16_t*>(buf), count, factor);
    case DataType::kInt32: return Scale_i32(static_cast<int32_t*>(buf), count, factor);
    case DataType::kInt64: return Scale_i64(static_cast<int64_t*>(buf), count, factor);
    case DataType::kFloat32: return Scale_f32(static_cast<float*>(buf), count, factor);
    case DataType::kFloat64: return Scale_f64(static_cast<double*>(buf), count, factor);
    case DataType::kFloat16:
    case DataType::kBFloat16: {
      alignas(64) float tmp[kBlock];
      uint16_t* p = static_cast<uint16_t*>(buf);
      for (int64_t off = 0; off < count; off += kBlock) {
        const int64_t len = std::min(kBlock, count - off);
        ToFloat(dtype, p + off, tmp, len);
        ScaleFloatBlock(tmp, len, static_cast<float>(factor));
        FromFloat(dtype, tmp, p + off, len);
      }
      return;
    }
    case DataType::kBool:
      if (factor == 0.0) std::memset(buf, 0, count);
      return;
  }
}

}  // namespace kernels
}  // namespace hvda
