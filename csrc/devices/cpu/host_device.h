// The host (CPU) device: 64-byte aligned heap memory and kernels from
// kernels/reduce_kernels.h that run at once on the calling thread. Its streams are
// always drained and its events always complete (NOTE [Streams on the HAL]).
// Stateless apart from its two member objects, so it is safe to use from
// several threads, although the HAL does not require it.
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
  Status AllocateHost(size_t bytes, void** ptr) override { return Allocate(bytes, ptr); }
  void FreeHost(void* ptr) override { Free(ptr); }
  // Run at once; `stream` may be null.
  Status CopyAsync(void* dst, const void* src, size_t bytes, Stream* stream) override;
  Status CopyToHostAsync(void* dst, const void* src, size_t bytes, Stream* stream) override {
    return CopyAsync(dst, src, bytes, stream);
  }
  Status CopyFromHostAsync(void* dst, const void* src, size_t bytes, Stream* stream) override {
    return CopyAsync(dst, src, bytes, stream);
  }
  Status MemsetAsync(void* dst, int value, size_t bytes, Stream* stream) override;
};

class HostExecution : public DeviceExecution {
 public:
  Status CreateStream(std::unique_ptr<Stream>* stream) override;
  Status WrapStream(void* native, std::unique_ptr<Stream>* stream) override;
  Status SynchronizeStream(Stream*) override { return Status::OK(); }
  Status CreateEvent(std::unique_ptr<Event>* event) override;
  Status RecordEvent(Event*, Stream*) override { return Status::OK(); }
  Status QueryEvent(Event*, bool* done) override {
    *done = true;
    return Status::OK();
  }
  Status SynchronizeEvent(Event*) override { return Status::OK(); }
  Status StreamWaitEvent(Stream*, Event*) override { return Status::OK(); }
  // Run at once; `stream` may be null.
  Status Scale(void* buf, int64_t count, DataType dtype, double factor, Stream* stream) override;
  Status ReduceInto(void* dst, const void* src, int64_t count, DataType dtype, ReduceOp op,
                    Stream* stream) override;
  Status BatchedCopy(const std::vector<CopyDesc>& copies, Stream* stream) override;
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
