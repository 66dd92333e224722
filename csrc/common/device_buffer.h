// DeviceBuffer: accelerator memory allocated by the core for outputs whose
// size depends on other ranks (allgather, alltoall on a plugin device). The
// framework adapter copies it into a tensor it allocates (CopyTo), then
// drops it.
//
// Ownership: holds the device (shared), so the memory can be freed whenever
// the last owner (a Work, the Python wrapper) lets go; the executor's
// completion event guarantees no device work still writes it by then.
// Thread-safety: CopyTo may be called from any thread (PluginDevice's
// thread-safe calls).
#pragma once

#include <cstddef>
#include <memory>

#include "common/hal/device.h"
#include "common/util/status.h"

namespace hvda {

class DeviceBuffer {
 public:
  static Status Allocate(std::shared_ptr<Device> device, size_t bytes,
                         std::shared_ptr<DeviceBuffer>* out);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() { return data_; }
  size_t bytes() const { return bytes_; }
  // Copies the whole buffer to device memory dst, ordered on the framework's
  // native stream (null: the device's default stream), and blocks until done.
  Status CopyTo(void* dst, void* native_stream) const;

 private:
  DeviceBuffer(std::shared_ptr<Device> d, void* p, size_t n)
      : device_(std::move(d)), data_(p), bytes_(n) {}
  std::shared_ptr<Device> device_;
  void* data_;
  size_t bytes_;
};

}  // namespace hvda
