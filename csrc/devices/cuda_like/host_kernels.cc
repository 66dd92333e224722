#include "devices/cuda_like/host_kernels.h"

#include <cstring>

#include "common/dtype.h"
#include "kernels/half.h"
#include "kernels/reduce_kernels.h"

namespace hvda {
namespace vendor {

// The ABI's dtype and reduce-op numbering is the core's (plugin.h).
static_assert(HVDA_FLOAT64 == static_cast<int>(DataType::kFloat64), "dtype numbering");
static_assert(HVDA_UINT16 == static_cast<int>(DataType::kUInt16), "dtype numbering");
static_assert(HVDA_PRODUCT == static_cast<int>(ReduceOp::kProduct), "reduce op numbering");

size_t DtypeSize(hvda_dtype dtype) {
  if (!IsValidDataType(static_cast<int32_t>(dtype))) return 0;
  return DataTypeSize(static_cast<DataType>(dtype));
}

void HostScale(void* buf, int64_t count, hvda_dtype dtype, double factor) {
  kernels::Scale(buf, count, static_cast<DataType>(dtype), factor);
}

void HostReduceInto(void* dst, const void* src, int64_t count, hvda_dtype dtype,
                    hvda_reduce_op op) {
  kernels::Reduce2(dst, dst, src, count, static_cast<DataType>(dtype), static_cast<ReduceOp>(op));
}

void ScalarOf(double value, hvda_dtype dtype, void* out) {
  switch (dtype) {
    case HVDA_FLOAT64: std::memcpy(out, &value, 8); return;
    case HVDA_FLOAT32: {
      const float f = static_cast<float>(value);
      std::memcpy(out, &f, 4);
      return;
    }
    case HVDA_FLOAT16: {
      const uint16_t h = FloatToHalf(static_cast<float>(value));
      std::memcpy(out, &h, 2);
      return;
    }
    case HVDA_BFLOAT16: {
      const uint16_t b = FloatToBFloat16(static_cast<float>(value));
      std::memcpy(out, &b, 2);
      return;
    }
    default: std::memset(out, 0, 8); return;
  }
}

}  // namespace vendor
}  // namespace hvda
