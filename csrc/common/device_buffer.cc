#include "common/device_buffer.h"

namespace hvda {

Status DeviceBuffer::Allocate(std::shared_ptr<Device> device, size_t bytes,
                              std::shared_ptr<DeviceBuffer>* out) {
  void* p = nullptr;
  HVDA_RETURN_IF_ERROR(device->memory().Allocate(bytes, &p));
  out->reset(new DeviceBuffer(std::move(device), p, bytes));
  return Status::OK();
}

DeviceBuffer::~DeviceBuffer() { device_->memory().Free(data_); }

Status DeviceBuffer::CopyTo(void* dst, void* native_stream) const {
  if (bytes_ == 0) return Status::OK();
  std::unique_ptr<Stream> s;
  HVDA_RETURN_IF_ERROR(device_->execution().WrapStream(native_stream, &s));
  HVDA_RETURN_IF_ERROR(device_->memory().CopyAsync(dst, data_, bytes_, s.get()));
  return device_->execution().SynchronizeStream(s.get());
}

}  // namespace hvda
