// The host (CPU) device: 64-byte aligned heap memory and synchronous kernels
// from reduce_kernels.h. Stateless apart from its two member objects, so it
// is safe to use from several threads, although the HAL does not require it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/hal/device.h"

namespace hvda {
namespace cpu {

// Allocation alignment: one cache line, and enough for any SIMD load.
constexpr size_t kHostAlignment = 64;

class HostMemory : public DeviceMemory {
 public:
  // *ptr receives 64-byte aligned memory of at least `bytes` bytes (a
  // non-null pointer even for 0 bytes); release it with Free.
  Status Allocate(size_t bytes, void** ptr) override;
  void Free(void* ptr) override;  // accepts nullptr
  Status Copy(void* dst, const void* src, size_t bytes) override;
  Status Memset(void* dst, int value, size_t bytes) override;
};

class HostExecution : public DeviceExecution {
 public:
  Status Scale(void* buf, int64_t count, DataType dtype, double factor) override;
  Status ReduceInto(void* dst, const void* src, int64_t count, DataType dtype,
                    ReduceOp op) override;
  Status BatchedCopy(const std::vector<CopyDesc>& copies) override;
};

class HostDevice : public Device {
 public:
  DeviceKind kind() const override { return DeviceKind::kCPU; }
  std::string name() const override { return "cpu"; }
  DeviceMemory& memory() override { return memory_; }
  DeviceExecution& execution() override { return execution_; }

 private:
  HostMemory memory_;
  HostExecution execution_;
};

}  // namespace cpu
}  // namespace hvda
