#include "device_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>

#include "emu_core.h"

namespace hvda_emu {

Allocation::~Allocation() {
  munmap(reinterpret_cast<void*>(device_), mapped_);
  munmap(shadow_, mapped_);
}

int DeviceMemory::Allocate(size_t n, void** device_ptr) {
  if (device_ptr == nullptr) return kRtInvalidValue;
  *device_ptr = nullptr;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (n > SIZE_MAX - page) return kRtMemoryAllocation;
  const size_t mapped = n == 0 ? page : (n + page - 1) / page * page;
  // Address space only: PROT_NONE and unbacked, so a host access faults.
  void* dev = mmap(nullptr, mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (dev == MAP_FAILED) return kRtMemoryAllocation;
  void* shadow = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (shadow == MAP_FAILED) {
    munmap(dev, mapped);
    return kRtMemoryAllocation;
  }
  auto a = std::make_shared<Allocation>(reinterpret_cast<uintptr_t>(dev),
                                        static_cast<char*>(shadow), n, mapped);
  std::lock_guard<std::mutex> lock(mu_);
  by_device_.emplace(a->device(), std::move(a));
  *device_ptr = dev;
  return kRtSuccess;
}

int DeviceMemory::Free(void* p) {
  if (p == nullptr) return kRtSuccess;
  std::shared_ptr<Allocation> a;  // unmapped after the lock is released, if last
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_device_.find(reinterpret_cast<uintptr_t>(p));
  if (it == by_device_.end()) return kRtInvalidValue;
  a = std::move(it->second);
  by_device_.erase(it);
  return kRtSuccess;
}

std::shared_ptr<Allocation> DeviceMemory::Find(uintptr_t a) const {
  auto it = by_device_.upper_bound(a);
  if (it == by_device_.begin()) return nullptr;
  --it;
  return a < it->first + it->second->mapped() ? it->second : nullptr;
}

bool DeviceMemory::Resolve(const void* p, size_t n, DeviceSpan* span) const {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<Allocation> alloc = Find(a);
  if (alloc == nullptr && n == 0 && a > 0) alloc = Find(a - 1);  // one past the end
  if (alloc == nullptr) return false;
  const size_t offset = a - alloc->device();
  if (offset > alloc->size() || n > alloc->size() - offset) return false;
  span->shadow = alloc->shadow() + offset;
  span->alloc = std::move(alloc);
  return true;
}

bool DeviceMemory::IsHost(const void* p, size_t n) const {
  if (p == nullptr) return false;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t last = a + (n == 0 ? 0 : n - 1);
  if (last < a) return false;  // wraps around the address space
  std::lock_guard<std::mutex> lock(mu_);
  // The reservation that starts at or before `last` is the only candidate.
  auto it = by_device_.upper_bound(last);
  if (it == by_device_.begin()) return true;
  --it;
  return it->first + it->second->mapped() <= a;
}

int PinnedHostMemory::Allocate(size_t n, void** p) {
  if (p == nullptr) return kRtInvalidValue;
  *p = std::malloc(n == 0 ? 1 : n);
  if (*p == nullptr) return kRtMemoryAllocation;
  std::lock_guard<std::mutex> lock(mu_);
  live_.insert(*p);
  return kRtSuccess;
}

int PinnedHostMemory::Free(void* p) {
  if (p == nullptr) return kRtSuccess;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (live_.erase(p) == 0) return kRtInvalidValue;
  }
  std::free(p);
  return kRtSuccess;
}

}  // namespace hvda_emu
