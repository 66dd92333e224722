// What the CPU this process runs on can execute, for the host kernels' choice
// between an AVX2 build of a loop and the baseline x86-64 one
// (HVDA_AVX2_DISPATCH below).
//
// Detected with CPUID and XGETBV (the OS must save the YMM registers), not
// with the compiler runtime's __builtin_cpu_supports / target_clones: those
// depend on libgcc's or compiler-rt's CPU model, which zig's runtime (the
// release wheels' toolchain, packaging/toolchain/zig.cmake) reports without
// AVX2, and whose object also brought slow memcpy copies into the library.
// Decided once per process (first call, thread-safe), immutable afterwards.
#pragma once

namespace hvda {
namespace kernels {

bool CpuHasAvx2();      // AVX2 usable (CPU and OS)
bool CpuHasAvx2F16c();  // AVX2 and F16C usable

}  // namespace kernels
}  // namespace hvda

// HVDA_AVX2_DISPATCH(name, params, args, body): defines `void name params`
// from `body` twice, for AVX2 and for baseline x86-64 (the compiler
// vectorises each), and `name` calls the one the CPU can run. Elsewhere than
// x86-64, only the baseline.
#if defined(__x86_64__)
#define HVDA_AVX2_DISPATCH(NAME, PARAMS, ARGS, BODY)                                  \
  __attribute__((target("avx2"))) void NAME##_avx2 PARAMS BODY                       \
  void NAME##_base PARAMS BODY                                                       \
  void NAME PARAMS {                                                                 \
    if (::hvda::kernels::CpuHasAvx2()) return NAME##_avx2 ARGS;                      \
    return NAME##_base ARGS;                                                         \
  }
#else
#define HVDA_AVX2_DISPATCH(NAME, PARAMS, ARGS, BODY) void NAME PARAMS BODY
#endif
