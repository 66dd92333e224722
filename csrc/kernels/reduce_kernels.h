// Host reduction and scaling kernels, shared by the CPU device
// (csrc/devices/cpu: host device, shm, gloo and MPI backends) and by the
// vendor plugins' staged host work (csrc/devices/cuda_like/host_kernels.cc).
//
// All of them are synchronous, allocate nothing on the heap, keep no state
// and are safe to call from any thread.
//
// NOTE [16-bit floats]: float16 and bfloat16 are reduced and scaled in float32;
// each result is rounded back once, to nearest with ties to even. Where the
// CPU has F16C (checked at run time, never required at build time), float16
// conversion uses it (kernels/half.h); the portable fallback gives
// bit-identical results.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "kernels/half.h"  // 16-bit float conversions

namespace hvda {
namespace kernels {

// Whether the kernels below implement (dtype, op): Sum, Min, Max and Product
// over every dtype except bool.
bool IsReducible(DataType dtype, ReduceOp op);

// dst[i] = op(a[i], b[i]) for i in [0, count). dst may be exactly a or b, but
// must not partially overlap either. Precondition: IsReducible(dtype, op).
// Integer Sum/Product wrap around (two's complement).
void Reduce2(void* dst, const void* a, const void* b, int64_t count, DataType dtype,
             ReduceOp op);

// dst[i] = op(srcs[0][i], ..., srcs[n-1][i]), n >= 1, folded in source order.
// dst may be exactly any of srcs but must not partially overlap one. 16-bit
// floats accumulate in float32 across all sources and round once.
// Precondition: IsReducible(dtype, op).
void ReduceN(void* dst, const void* const* srcs, int n, int64_t count, DataType dtype,
             ReduceOp op);

// buf[i] *= factor. Integers are scaled in double and truncated toward zero,
// float32/float64 in double, float16/bfloat16 in float32. bool is unchanged
// unless factor == 0 (then false).
void Scale(void* buf, int64_t count, DataType dtype, double factor);

}  // namespace kernels

}  // namespace hvda
