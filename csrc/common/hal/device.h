// HAL: what the core needs from a device, split as in UCC into memory and
// execution. The core reaches device memory and kernels only through these.
//
// Threading: a Device is used by the runtime's background thread only; an
// implementation need not be thread-safe unless it says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/util/status.h"

namespace hvda {

enum class DeviceKind : int32_t { kCPU = 0, kCUDA = 1, kGCU = 2, kPlugin = 3 };

// Memory management on one device. Pointers returned by Allocate are owned by
// the caller and must be released with Free on the same object.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual Status Allocate(size_t bytes, void** ptr) = 0;
  virtual void Free(void* ptr) = 0;
  // Blocking copy; regions must not overlap.
  virtual Status Copy(void* dst, const void* src, size_t bytes) = 0;
  virtual Status Memset(void* dst, int value, size_t bytes) = 0;
};

// One contiguous copy of a batched copy (fusion-buffer pack/unpack).
struct CopyDesc {
  void* dst;
  const void* src;
  size_t bytes;
};

// Kernels the core runs on device data. All calls block until done (a device
// with streams records and waits internally; async completion comes later).
class DeviceExecution {
 public:
  virtual ~DeviceExecution() = default;
  // buf[i] *= factor. Integers are scaled in double and truncated toward zero,
  // float16/bfloat16 in float32 (upstream's ScaleBuffer semantics).
  virtual Status Scale(void* buf, int64_t count, DataType dtype, double factor) = 0;
  // dst[i] = op(dst[i], src[i]); op is Sum, Min, Max or Product.
  virtual Status ReduceInto(void* dst, const void* src, int64_t count, DataType dtype,
                            ReduceOp op) = 0;
  virtual Status BatchedCopy(const std::vector<CopyDesc>& copies) = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceKind kind() const = 0;
  virtual std::string name() const = 0;  // e.g. "cpu"
  virtual DeviceMemory& memory() = 0;
  virtual DeviceExecution& execution() = 0;
};

}  // namespace hvda
