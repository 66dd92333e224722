// Host-side kernels for staged device work: a vendor plugin cannot ship
// device kernels of its own (no vendor compiler at build time), so scale and
// reduce-into for types its collective library cannot do run on pinned host
// copies from a host function enqueued on the stream (device_ops.cc). They
// are the shared host kernels (kernels/reduce_kernels.h, the CPU device's
// too), compiled into the plugin, so the semantics are the HAL's exactly.
#pragma once

#include <cstddef>
#include <cstdint>

#include "horovod_accel/plugin.h"

namespace hvda {
namespace vendor {

size_t DtypeSize(hvda_dtype dtype);  // 0 for an unknown dtype

// buf[i] *= factor (integers in double, truncated toward zero; 16-bit floats
// in float32).
void HostScale(void* buf, int64_t count, hvda_dtype dtype, double factor);
// dst[i] = op(dst[i], src[i]) for HVDA_SUM, HVDA_MIN, HVDA_MAX, HVDA_PRODUCT.
void HostReduceInto(void* dst, const void* src, int64_t count, hvda_dtype dtype,
                    hvda_reduce_op op);

// `value` as a scalar of `dtype` in *out (>= 8 bytes): the host-immediate
// scalar of a PreMulSum reduction. Floating-point dtypes only.
void ScalarOf(double value, hvda_dtype dtype, void* out);

}  // namespace vendor
}  // namespace hvda
