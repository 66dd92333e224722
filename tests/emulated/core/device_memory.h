// Emulated device memory. An allocation is two anonymous mappings: the
// device address handed to the caller, reserved PROT_NONE so that any host
// dereference of it faults (SIGSEGV), and a read-write "shadow" of the same
// size that only the runtime's stream workers touch. Device pointers are
// translated to shadow pointers by a range lookup, so a pointer into the
// middle of an allocation works.
//
// Lifetime: an allocation is mapped until it is freed AND every DeviceSpan
// that resolved into it is gone (queued stream work holds spans), so a free
// never pulls memory from under work already enqueued; freed address ranges
// are not reused while still mapped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_set>

namespace hvda_emu {

class Allocation {
 public:
  Allocation(uintptr_t device, char* shadow, size_t size, size_t mapped)
      : device_(device), shadow_(shadow), size_(size), mapped_(mapped) {}
  ~Allocation();  // unmaps both mappings
  Allocation(const Allocation&) = delete;
  Allocation& operator=(const Allocation&) = delete;

  uintptr_t device() const { return device_; }
  char* shadow() const { return shadow_; }
  size_t size() const { return size_; }      // bytes asked for
  size_t mapped() const { return mapped_; }  // bytes reserved (>= size, whole pages, >= 1 page)

 private:
  uintptr_t device_;
  char* shadow_;
  size_t size_;
  size_t mapped_;
};

// A validated device byte range: where the runtime's threads access it, and
// the reference that keeps it mapped.
struct DeviceSpan {
  std::shared_ptr<const Allocation> alloc;
  char* shadow = nullptr;
};

// The process's device allocations. Thread-safe.
class DeviceMemory {
 public:
  // kRtSuccess, or kRtMemoryAllocation when the mappings cannot be made. A
  // 0-byte allocation gets a unique pointer that must be freed.
  int Allocate(size_t n, void** device_ptr);
  // kRtInvalidValue unless p is the start of a live allocation; null is a
  // no-op.
  int Free(void* p);
  // True when [p, p + n) lies inside one live allocation (for n == 0: p is
  // inside it or one past its end); fills *span.
  bool Resolve(const void* p, size_t n, DeviceSpan* span) const;
  // True when p is non-null and [p, p + max(n, 1)) touches no device
  // reservation: what a host-side pointer of a copy must satisfy.
  bool IsHost(const void* p, size_t n) const;

 private:
  std::shared_ptr<Allocation> Find(uintptr_t a) const;  // the allocation whose reservation holds a

  mutable std::mutex mu_;
  std::map<uintptr_t, std::shared_ptr<Allocation>> by_device_;  // keyed by device address
};

// Pinned host memory (topsHostMalloc / cudaHostAlloc): ordinary host memory,
// tracked only so that freeing anything else is an error. Thread-safe.
class PinnedHostMemory {
 public:
  int Allocate(size_t n, void** p);
  int Free(void* p);  // kRtInvalidValue unless p came from Allocate; null is a no-op

 private:
  std::mutex mu_;
  std::unordered_set<void*> live_;
};

}  // namespace hvda_emu
