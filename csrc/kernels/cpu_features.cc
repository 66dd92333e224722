#include "kernels/cpu_features.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace hvda {
namespace kernels {
namespace {

struct Features {
  bool avx2 = false;
  bool f16c = false;
};

Features Detect() {
  Features f;
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool avx = (c & bit_AVX) != 0, osxsave = (c & bit_OSXSAVE) != 0;
  const bool f16c = (c & bit_F16C) != 0;
  if (!avx || !osxsave) return f;
  // XCR0 bits 1 and 2: the OS saves the XMM and YMM state on context switch.
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & 0x6u) != 0x6u) return f;
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = (b & bit_AVX2) != 0;
  f.f16c = f.avx2 && f16c;
#endif
  return f;
}

const Features& Cpu() {
  static const Features features = Detect();
  return features;
}

}  // namespace

bool CpuHasAvx2() { return Cpu().avx2; }
bool CpuHasAvx2F16c() { return Cpu().f16c; }

}  // namespace kernels
}  // namespace hvda
