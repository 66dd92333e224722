// Element-wise reduce and scale for every dtype (kernels.h).
//
// Each dtype has a codec: the element type in memory (E), the type the
// arithmetic runs in (V), and Load/Store between them. The op is a template
// argument, so each (dtype, op) pair is one tight loop.
#include "kernels.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace example {

namespace {

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Integers wrap: computed in an unsigned type at least as wide as int (so
// that e.g. uint16 * uint16 never overflows a signed int).
template <typename T>
using Wide = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <typename V>
V Add(V a, V b) {
  if constexpr (std::is_integral_v<V>) {
    return static_cast<V>(static_cast<Wide<V>>(a) + static_cast<Wide<V>>(b));
  } else {
    return a + b;
  }
}

template <typename V>
V Mul(V a, V b) {
  if constexpr (std::is_integral_v<V>) {
    return static_cast<V>(static_cast<Wide<V>>(a) * static_cast<Wide<V>>(b));
  } else {
    return a * b;
  }
}

template <hvda_reduce_op kOp, typename V>
V Combine(V a, V b) {
  if constexpr (std::is_same_v<V, bool>) {
    return (kOp == HVDA_SUM || kOp == HVDA_MAX) ? (a || b) : (a && b);
  } else if constexpr (kOp == HVDA_SUM) {
#ifdef EXAMPLE_PLUGIN_BROKEN_SUM
    // DELIBERATELY WRONG (the "broken" build, horovod_accel_example_broken):
    // Sum combines x + 2*y, so every reduction of two or more ranks is off.
    // It exists to prove the conformance suite catches a wrong plugin.
    return Add(a, Add(b, b));
#else
    return Add(a, b);
#endif
  } else if constexpr (kOp == HVDA_PRODUCT) {
    return Mul(a, b);
  } else if constexpr (kOp == HVDA_MIN) {
    return b < a ? b : a;
  } else {
    return b > a ? b : a;
  }
}

template <typename T>
struct Plain {  // integers, float32, float64: arithmetic in the element type
  using E = T;
  using V = T;
  static V Load(E e) { return e; }
  static E Store(V v) { return v; }
};

struct Half {
  using E = uint16_t;
  using V = float;
  static V Load(E e) { return HalfToFloat(e); }
  static E Store(V v) { return FloatToHalf(v); }
};

struct BFloat {
  using E = uint16_t;
  using V = float;
  static V Load(E e) { return BFloat16ToFloat(e); }
  static E Store(V v) { return FloatToBFloat16(v); }
};

struct Bool {
  using E = uint8_t;
  using V = bool;
  static V Load(E e) { return e != 0; }
  static E Store(V v) { return v ? 1 : 0; }
};

template <typename Codec, hvda_reduce_op kOp>
void ReduceLoop(void* dst, const void* src, size_t count) {
  using E = typename Codec::E;
  E* d = static_cast<E*>(dst);
  const E* s = static_cast<const E*>(src);
  for (size_t i = 0; i < count; ++i)
    d[i] = Codec::Store(Combine<kOp>(Codec::Load(d[i]), Codec::Load(s[i])));
}

template <typename Codec>
void ReduceAs(void* dst, const void* src, size_t count, hvda_reduce_op op) {
  switch (op) {
    case HVDA_SUM: ReduceLoop<Codec, HVDA_SUM>(dst, src, count); break;
    case HVDA_MIN: ReduceLoop<Codec, HVDA_MIN>(dst, src, count); break;
    case HVDA_MAX: ReduceLoop<Codec, HVDA_MAX>(dst, src, count); break;
    case HVDA_PRODUCT: ReduceLoop<Codec, HVDA_PRODUCT>(dst, src, count); break;
    default: break;  // excluded by CanReduce
  }
}

// One element times `factor`, as plugin.h's scale says.
template <typename Codec>
typename Codec::V ScaleValue(typename Codec::V v, double factor) {
  using V = typename Codec::V;
  if constexpr (std::is_same_v<V, bool>) {
    return (v ? 1.0 : 0.0) * factor != 0.0;
  } else if constexpr (std::is_integral_v<V>) {  // in double, toward zero
    double x = std::trunc(static_cast<double>(v) * factor);
    if (std::isnan(x)) return 0;
    if (x <= static_cast<double>(std::numeric_limits<V>::min())) return std::numeric_limits<V>::min();
    if (x >= static_cast<double>(std::numeric_limits<V>::max())) return std::numeric_limits<V>::max();
    return static_cast<V>(x);
  } else if constexpr (std::is_same_v<typename Codec::E, V>) {  // float32, float64
    return static_cast<V>(v * factor);  // as C's `v *= factor`
  } else {  // float16, bfloat16: in float32
    return v * static_cast<float>(factor);
  }
}

template <typename Codec>
void ScaleAs(void* buf, size_t count, double factor) {
  using E = typename Codec::E;
  E* b = static_cast<E*>(buf);
  for (size_t i = 0; i < count; ++i)
    b[i] = Codec::Store(ScaleValue<Codec>(Codec::Load(b[i]), factor));
}

// Calls fn with the codec of `dtype` (as a null pointer of its type); false
// for a dtype this build does not know.
template <typename Fn>
bool WithCodec(hvda_dtype dtype, Fn&& fn) {
  switch (dtype) {
    case HVDA_UINT8: fn(static_cast<Plain<uint8_t>*>(nullptr)); return true;
    case HVDA_INT8: fn(static_cast<Plain<int8_t>*>(nullptr)); return true;
    case HVDA_INT16: fn(static_cast<Plain<int16_t>*>(nullptr)); return true;
    case HVDA_INT32: fn(static_cast<Plain<int32_t>*>(nullptr)); return true;
    case HVDA_INT64: fn(static_cast<Plain<int64_t>*>(nullptr)); return true;
    case HVDA_FLOAT16: fn(static_cast<Half*>(nullptr)); return true;
    case HVDA_BFLOAT16: fn(static_cast<BFloat*>(nullptr)); return true;
    case HVDA_FLOAT32: fn(static_cast<Plain<float>*>(nullptr)); return true;
    case HVDA_FLOAT64: fn(static_cast<Plain<double>*>(nullptr)); return true;
    case HVDA_BOOL: fn(static_cast<Bool*>(nullptr)); return true;
#if HVDA_PLUGIN_ABI_MINOR >= 1
    // uint16 was appended after ABI 1.0 shipped. The 1.0 build plays a
    // plugin written before it, so it does not know uint16 (supports()
    // then answers 0, as plugin.h asks for an unknown dtype).
    case HVDA_UINT16: fn(static_cast<Plain<uint16_t>*>(nullptr)); return true;
#endif
    default: break;  // a dtype this build does not know
  }
  return false;
}

}  // namespace

size_t ElementSize(hvda_dtype dtype) {
  size_t size = 0;
  WithCodec(dtype, [&](auto* codec) { size = sizeof(typename std::remove_pointer_t<decltype(codec)>::E); });
  return size;
}

bool CanReduce(hvda_dtype dtype, hvda_reduce_op op) {
  bool known_op = op == HVDA_SUM || op == HVDA_MIN || op == HVDA_MAX || op == HVDA_PRODUCT;
  return known_op && ElementSize(dtype) != 0;
}

void Reduce(void* dst, const void* src, size_t count, hvda_dtype dtype, hvda_reduce_op op) {
  WithCodec(dtype, [&](auto* codec) {
    ReduceAs<std::remove_pointer_t<decltype(codec)>>(dst, src, count, op);
  });
}

void Scale(void* buf, size_t count, hvda_dtype dtype, double factor) {
  WithCodec(dtype, [&](auto* codec) {
    ScaleAs<std::remove_pointer_t<decltype(codec)>>(buf, count, factor);
  });
}

// ---------------------------------------------------------------- 16-bit floats

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0x1f) return BitsFloat(sign | 0x7f800000u | (mant << 13));  // inf, NaN
  if (exp != 0) return BitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
  const float magnitude = static_cast<float>(mant) * 5.9604644775390625e-8f;  // mant * 2^-24
  return sign ? -magnitude : magnitude;  // zero or subnormal
}

uint16_t FloatToHalf(float f) {
  const uint32_t x = FloatBits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7e00u;  // NaN (quiet)
  if (ax >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to infinity
  const uint32_t exp = ax >> 23;
  if (exp < 113) {  // below 2^-14: a half subnormal (or zero), units of 2^-24
    if (exp < 102) return sign;  // below 2^-25: rounds to zero
    const uint32_t full = 0x800000u | (ax & 0x7fffffu), shift = 126 - exp;  // 14..24
    uint32_t m = full >> shift;
    const uint32_t rest = full & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (m & 1))) ++m;
    return static_cast<uint16_t>(sign | m);  // m == 0x400 is the smallest normal
  }
  uint32_t h = ((exp - 112) << 10) | ((ax & 0x7fffffu) >> 13);
  const uint32_t rest = ax & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) ++h;  // a carry bumps the exponent
  return static_cast<uint16_t>(sign | h);
}

float BFloat16ToFloat(uint16_t h) { return BitsFloat(static_cast<uint32_t>(h) << 16); }

uint16_t FloatToBFloat16(float f) {
  uint32_t x = FloatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest, ties to even
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace example
