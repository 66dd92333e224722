#include "reduce.h"

#include "config.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace hvda_emu {

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float
    const float f = static_cast<float>(mant) * (1.0f / 16777216.0f);
    return sign ? -f : f;
  }
  const uint32_t bits = exp == 31 ? (sign | 0x7f800000u | (mant << 13))
                                  : (sign | ((exp + 112) << 23) | (mant << 13));
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) return sign | (a > 0x7f800000u ? 0x7e00 : 0x7c00);  // NaN, inf
  if (a >= 0x477ff000u) return sign | 0x7c00;  // rounds past the largest half: inf
  if (a < 0x38800000u) {  // below 2^-14: subnormal half, mant = round(|f| * 2^24)
    float af;
    std::memcpy(&af, &a, 4);
    return sign | static_cast<uint16_t>(std::nearbyint(af * 16777216.0f));
  }
  // Normal: rebias the exponent (127 -> 15) and round 23 -> 10 mantissa bits.
  const uint32_t rounded = a + 0xfffu + ((a >> 13) & 1u);
  return sign | static_cast<uint16_t>((rounded - (112u << 23)) >> 13);
}

float Bfloat16ToFloat(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToBfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

namespace {

struct Half { uint16_t bits; };
struct Bf16 { uint16_t bits; };

// How a storage type is computed: Load to the compute type C, Store back.
template <typename T> struct Num {
  using C = T;
  static C Load(T v) { return v; }
  static T Store(C c) { return c; }
};
template <> struct Num<Half> {
  using C = float;
  static C Load(Half v) { return HalfToFloat(v.bits); }
  static Half Store(C c) { return Half{FloatToHalf(c)}; }
};
template <> struct Num<Bf16> {
  using C = float;
  static C Load(Bf16 v) { return Bfloat16ToFloat(v.bits); }
  static Bf16 Store(C c) { return Bf16{FloatToBfloat16(c)}; }
};

// Integer + and * wrap (computed unsigned: no signed overflow).
template <typename C> C Add(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <typename C> C Mul(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned, std::make_unsigned_t<C>>;
    return static_cast<C>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

// Element i of a buffer of T. Buffers may be misaligned (ring offsets,
// user offsets), so elements are copied, never dereferenced in place.
template <typename T> T At(const void* p, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(p) + i * sizeof(T), sizeof(T));
  return v;
}
template <typename T> void Set(void* p, size_t i, T v) {
  std::memcpy(static_cast<char*>(p) + i * sizeof(T), &v, sizeof(T));
}

template <typename T> struct Kernel {
  using N = Num<T>;
  using C = typename N::C;

  static C Scalar(const Reduction& r) { return N::Load(At<T>(r.scalar, 0)); }
  static C Get(const void* p, size_t i) { return N::Load(At<T>(p, i)); }
  static void Put(void* p, size_t i, C c) { Set<T>(p, i, N::Store(c)); }

  static void First(const Reduction& r, void* acc, const void* x, size_t n) {
    if (r.op == kPreMulSum) {
      const C s = Scalar(r);
      for (size_t i = 0; i < n; ++i) Put(acc, i, Mul(s, Get(x, i)));
    } else if (acc != x) {
      std::memmove(acc, x, n * sizeof(T));
    }
  }

  static void Next(const Reduction& r, void* acc, const void* x, size_t n) {
    switch (r.op) {
      case kSum:
      case kAvg:
        if (r.op == kSum && GetConfig().broken_sum) {  // deliberately wrong: acc + 2x
          for (size_t i = 0; i < n; ++i) Put(acc, i, Add(Get(acc, i), Add(Get(x, i), Get(x, i))));
          break;
        }
        for (size_t i = 0; i < n; ++i) Put(acc, i, Add(Get(acc, i), Get(x, i)));
        break;
      case kProd:
        for (size_t i = 0; i < n; ++i) Put(acc, i, Mul(Get(acc, i), Get(x, i)));
        break;
      case kMax:
        for (size_t i = 0; i < n; ++i) Put(acc, i, std::max(Get(acc, i), Get(x, i)));
        break;
      case kMin:
        for (size_t i = 0; i < n; ++i) Put(acc, i, std::min(Get(acc, i), Get(x, i)));
        break;
      case kPreMulSum: {
        const C s = Scalar(r);
        for (size_t i = 0; i < n; ++i) Put(acc, i, Add(Get(acc, i), Mul(s, Get(x, i))));
        break;
      }
    }
  }

  static void Finish(const Reduction& r, void* acc, size_t n) {
    if (r.op != kAvg || r.nranks == 1) return;
    const C div = static_cast<C>(r.nranks);
    for (size_t i = 0; i < n; ++i) Put(acc, i, Get(acc, i) / div);
  }
};

// Calls F<T>::Run(args...) for the storage type of dtype.
template <template <typename> class F, typename... Args>
void Dispatch(int dtype, Args&&... args) {
  switch (dtype) {
    case kInt8: F<int8_t>::Run(args...); break;
    case kUint8: F<uint8_t>::Run(args...); break;
    case kInt32: F<int32_t>::Run(args...); break;
    case kUint32: F<uint32_t>::Run(args...); break;
    case kInt64: F<int64_t>::Run(args...); break;
    case kUint64: F<uint64_t>::Run(args...); break;
    case kFloat16: F<Half>::Run(args...); break;
    case kFloat32: F<float>::Run(args...); break;
    case kFloat64: F<double>::Run(args...); break;
    case kBfloat16: F<Bf16>::Run(args...); break;
    default: break;
  }
}

template <typename T> struct FirstFn {
  static void Run(const Reduction& r, void* acc, const void* x, size_t n) {
    Kernel<T>::First(r, acc, x, n);
  }
};
template <typename T> struct NextFn {
  static void Run(const Reduction& r, void* acc, const void* x, size_t n) {
    Kernel<T>::Next(r, acc, x, n);
  }
};
template <typename T> struct FinishFn {
  static void Run(const Reduction& r, void* acc, size_t n) { Kernel<T>::Finish(r, acc, n); }
};

}  // namespace

size_t DTypeSize(int dtype) {
  static const size_t kSizes[kNumDTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
  return ValidDType(dtype) ? kSizes[dtype] : 0;
}

void ReduceFirst(const Reduction& r, void* acc, const void* x, size_t count) {
  Dispatch<FirstFn>(r.dtype, r, acc, x, count);
}
void ReduceNext(const Reduction& r, void* acc, const void* x, size_t count) {
  Dispatch<NextFn>(r.dtype, r, acc, x, count);
}
void ReduceFinish(const Reduction& r, void* acc, size_t count) {
  Dispatch<FinishFn>(r.dtype, r, acc, count);
}

}  // namespace hvda_emu
