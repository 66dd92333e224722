// The emulated TF PluggableDevice "GCU" (README.md, "The TF plugin"): what
// its parts share. TF talks to it through the StreamExecutor C API
// (SE_InitPlugin, platform.cc) and the kernel C API (TF_InitKernel,
// kernels.cc); the plugin talks to the emulated device through the TOPS
// runtime names only (libtopsrt_emu.so), as a vendor's plugin would, except
// for device compute (RtLaunchKernel, kernel_launch.h).
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "emu_vendor_api.h"
#include "tensorflow/c/experimental/stream_executor/stream_executor.h"
#include "tensorflow/c/tf_status.h"

// TF's opaque stream: one TOPS stream of one device. Created by
// create_stream, which registers it with its GcuDevice; destroyed by
// destroy_stream, which drains it first. hvda_tf_gcu_native_stream returns
// `stream`.
struct SP_Stream_st {
  topsStream_t stream;
  int device;
};

// TF's opaque event: one TOPS event (timing disabled).
struct SP_Event_st {
  topsEvent_t event;
};

// The TOPS stream (topsStream_t) behind a TF stream; null for null. Exported
// with exactly this name and signature: horovod's GCU device plugin looks it
// up (dlsym) to map the SP_Stream TF gives a kernel to its own stream. Valid
// while TF has not destroyed the stream.
extern "C" __attribute__((visibility("default"))) void* hvda_tf_gcu_native_stream(
    SP_Stream stream);

namespace hvda_tf_gcu {

// What the plugin keeps per TF device; SP_Device::device_handle points to
// it (create_device makes it, destroy_device deletes it). Thread-safe: TF
// calls the executor from many threads.
class GcuDevice {
 public:
  explicit GcuDevice(int ordinal) : ordinal_(ordinal) {}

  int ordinal() const { return ordinal_; }

  // Streams TF created on this device and has not destroyed yet, so that
  // synchronize_all_activity can wait for all of them.
  void AddStream(SP_Stream s);
  void RemoveStream(SP_Stream s);
  // Blocks until every stream of the device (and its default stream) ran
  // what was enqueued so far. kRtSuccess or the first failing TOPS result.
  topsError_t SynchronizeAll();

  // Allocation bookkeeping for get_allocator_stats / device_memory_usage.
  void Allocated(void* p, uint64_t size);
  // False when p is not a live allocation of this device.
  bool Freed(void* p);
  void Stats(SP_AllocatorStats* stats);
  int64_t BytesInUse();

 private:
  const int ordinal_;
  std::mutex mu_;
  std::unordered_set<SP_Stream> streams_;
  std::unordered_map<void*, uint64_t> allocations_;
  int64_t num_allocs_ = 0;
  int64_t bytes_in_use_ = 0;
  int64_t peak_bytes_in_use_ = 0;
  int64_t largest_alloc_size_ = 0;
};

// The device memory each emulated GCU reports (it is host memory in truth;
// the number only feeds TF's memory limits and statistics).
constexpr int64_t kDeviceMemoryBytes = int64_t{16} << 30;

inline GcuDevice* Device(const SP_Device* device) {
  return static_cast<GcuDevice*>(device->device_handle);
}

// True when rc is success. Otherwise sets *status (TF_INTERNAL, naming
// `what` and TOPS's error string) and clears the thread's TOPS last error.
bool TopsOk(topsError_t rc, const char* what, TF_Status* status);

// Fill the SP_StreamExecutor's function pointers (executor_memory.cc,
// executor_streams.cc).
void FillMemoryFns(SP_StreamExecutor* se);
void FillStreamFns(SP_StreamExecutor* se);

}  // namespace hvda_tf_gcu
