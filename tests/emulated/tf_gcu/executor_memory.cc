// The SP_StreamExecutor's memory functions: device memory per tensor through
// topsMalloc/topsFree (the platform sets use_bfc_allocator = 0, so every TF
// tensor is its own emulated allocation and its guards see every tensor),
// pinned host memory through topsHostMalloc/topsHostFree, and statistics.
#include <cstdio>

#include "gcu_plugin.h"

namespace hvda_tf_gcu {
namespace {

// On failure mem->opaque is null: TF reports the out-of-memory.
void Allocate(const SP_Device* device, uint64_t size, int64_t /*memory_space*/,
              SP_DeviceMemoryBase* mem) {
  mem->struct_size = SP_DEVICE_MEMORY_BASE_STRUCT_SIZE;
  mem->opaque = nullptr;
  mem->size = 0;
  void* p = nullptr;
  if (topsMalloc(&p, size) != 0) {
    topsGetLastError();
    return;
  }
  Device(device)->Allocated(p, size);
  mem->opaque = p;
  mem->size = size;
}

// topsFree keeps the memory mapped until stream work already queued on it
// ran, so TF may deallocate a tensor a queued kernel still reads.
void Deallocate(const SP_Device* device, SP_DeviceMemoryBase* mem) {
  if (mem == nullptr || mem->opaque == nullptr) return;
  if (!Device(device)->Freed(mem->opaque) || topsFree(mem->opaque) != 0) {
    // No status to report through: say it loudly, it is a plugin or TF bug.
    std::fprintf(stderr, "hvda_emu_tf_gcu: deallocate of %p: not a live GCU:%d allocation\n",
                 mem->opaque, Device(device)->ordinal());
    topsGetLastError();
  }
  mem->opaque = nullptr;
}

void* HostMemoryAllocate(const SP_Device* /*device*/, uint64_t size) {
  void* p = nullptr;
  if (topsHostMalloc(&p, size, 0) != 0) {
    topsGetLastError();
    return nullptr;
  }
  return p;
}

void HostMemoryDeallocate(const SP_Device* /*device*/, void* mem) {
  if (mem != nullptr && topsHostFree(mem) != 0) topsGetLastError();
}

TF_Bool GetAllocatorStats(const SP_Device* device, SP_AllocatorStats* stats) {
  stats->struct_size = SP_ALLOCATORSTATS_STRUCT_SIZE;
  Device(device)->Stats(stats);
  return 1;
}

TF_Bool DeviceMemoryUsage(const SP_Device* device, int64_t* free, int64_t* total) {
  *total = kDeviceMemoryBytes;
  *free = kDeviceMemoryBytes - Device(device)->BytesInUse();
  return 1;
}

}  // namespace

void FillMemoryFns(SP_StreamExecutor* se) {
  se->allocate = Allocate;
  se->deallocate = Deallocate;
  se->host_memory_allocate = HostMemoryAllocate;
  se->host_memory_deallocate = HostMemoryDeallocate;
  se->get_allocator_stats = GetAllocatorStats;
  se->device_memory_usage = DeviceMemoryUsage;
  // No unified memory (SP_Platform::supports_unified_memory = 0).
}

}  // namespace hvda_tf_gcu
