// GcuDevice (gcu_plugin.h): per-device streams and allocation statistics.
#include <algorithm>
#include <string>
#include <vector>

#include "gcu_plugin.h"

namespace hvda_tf_gcu {

void GcuDevice::AddStream(SP_Stream s) {
  std::lock_guard<std::mutex> lock(mu_);
  streams_.insert(s);
}

void GcuDevice::RemoveStream(SP_Stream s) {
  std::lock_guard<std::mutex> lock(mu_);
  streams_.erase(s);
}

topsError_t GcuDevice::SynchronizeAll() {
  std::vector<topsStream_t> streams;
  {
    // Synchronizing under the lock would stall stream creation meanwhile;
    // TF does not destroy a stream while it synchronizes its device.
    std::lock_guard<std::mutex> lock(mu_);
    for (SP_Stream s : streams_) streams.push_back(s->stream);
  }
  topsError_t rc = topsSetDevice(ordinal_);
  if (rc == 0) rc = topsStreamSynchronize(nullptr);  // the device's default stream
  for (topsStream_t s : streams) {
    if (rc != 0) break;
    rc = topsStreamSynchronize(s);
  }
  return rc;
}

void GcuDevice::Allocated(void* p, uint64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  allocations_[p] = size;
  const auto n = static_cast<int64_t>(size);
  ++num_allocs_;
  bytes_in_use_ += n;
  peak_bytes_in_use_ = std::max(peak_bytes_in_use_, bytes_in_use_);
  largest_alloc_size_ = std::max(largest_alloc_size_, n);
}

bool GcuDevice::Freed(void* p) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = allocations_.find(p);
  if (it == allocations_.end()) return false;
  bytes_in_use_ -= static_cast<int64_t>(it->second);
  allocations_.erase(it);
  return true;
}

void GcuDevice::Stats(SP_AllocatorStats* stats) {
  std::lock_guard<std::mutex> lock(mu_);
  stats->num_allocs = num_allocs_;
  stats->bytes_in_use = bytes_in_use_;
  stats->peak_bytes_in_use = peak_bytes_in_use_;
  stats->largest_alloc_size = largest_alloc_size_;
  stats->has_bytes_limit = 1;
  stats->bytes_limit = kDeviceMemoryBytes;
  stats->bytes_reserved = 0;
  stats->peak_bytes_reserved = 0;
  stats->has_bytes_reservable_limit = 0;
  stats->bytes_reservable_limit = 0;
  stats->largest_free_block_bytes = kDeviceMemoryBytes - bytes_in_use_;
}

int64_t GcuDevice::BytesInUse() {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_in_use_;
}

bool TopsOk(topsError_t rc, const char* what, TF_Status* status) {
  if (rc == 0) return true;
  topsGetLastError();  // the failure is reported here; do not leave it sticky
  const std::string message = std::string("GCU: ") + what + " failed: " + topsGetErrorString(rc);
  TF_SetStatus(status, TF_INTERNAL, message.c_str());
  return false;
}

}  // namespace hvda_tf_gcu
