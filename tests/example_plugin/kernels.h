// The example device's kernels: element-wise reduce and scale on host
// memory. The collective library reduces with them in every build; the ABI
// 1.0 build also hands them to the core as hvda_device_ops_v1.scale and
// reduce_into (a 1.1 core brings its own, see device_ops.cc).
//
// The dtypes: uint8, int8, int16, int32, int64, float16, bfloat16, float32,
// float64, bool, and (the ABI 1.1 build only, see kernels.cc) uint16.
// - float16 / bfloat16 are computed in float32 and rounded back to nearest,
//   ties to even;
// - integers wrap around on overflow (two's complement) in Sum and Product;
//   scale computes in double and truncates toward zero (saturating at the
//   type's range, NaN -> 0);
// - bool: Sum and Max are "or", Min and Product are "and"; any nonzero byte
//   is true, results are 0 or 1.
// The functions are synchronous and thread-safe (they touch only their
// arguments). dst and src of Reduce may be equal but must not otherwise
// overlap.
#pragma once

#include <cstddef>
#include <cstdint>

#include "horovod_accel/plugin.h"

namespace example {

// Bytes per element; 0 for a dtype this build does not know.
size_t ElementSize(hvda_dtype dtype);

// Whether Reduce handles (dtype, op): a known dtype and Sum/Min/Max/Product.
bool CanReduce(hvda_dtype dtype, hvda_reduce_op op);

// dst[i] = op(dst[i], src[i]) for i < count. Precondition: CanReduce.
void Reduce(void* dst, const void* src, size_t count, hvda_dtype dtype, hvda_reduce_op op);

// buf[i] *= factor for i < count. Precondition: ElementSize(dtype) != 0.
void Scale(void* buf, size_t count, hvda_dtype dtype, double factor);

// float16 / bfloat16 <-> float32 (round to nearest even).
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float BFloat16ToFloat(uint16_t h);
uint16_t FloatToBFloat16(float f);

}  // namespace example
