// A POSIX shared-memory segment (shm_open + mmap), owned RAII-style.
//
// Lifetime: the mapping lives as long as the ShmSegment; the name is unlinked
// by Unlink() or, if still linked, by the destructor of the creating side, so
// a failed setup leaks nothing. Once every peer has mapped it, the creator
// unlinks the name: the memory then lives only as long as the mappings, and a
// SIGKILLed job leaves nothing behind in /dev/shm.
#pragma once

#include <cstddef>
#include <string>

#include "common/util/status.h"

namespace hvda {
namespace cpu {

class ShmSegment {
 public:
  ShmSegment() = default;
  ~ShmSegment();
  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // Creates a new, zero-filled segment of `bytes` bytes; fails if `name`
  // exists. The memory is reserved up front (no SIGBUS later when /dev/shm
  // is full). Not thread-safe per object.
  static Status Create(const std::string& name, size_t bytes, ShmSegment* out);
  // Maps an existing segment, which must be exactly `bytes` bytes long.
  static Status Open(const std::string& name, size_t bytes, ShmSegment* out);

  // Removes the name (idempotent); existing mappings stay valid.
  void Unlink();

  char* data() const { return static_cast<char*>(addr_); }
  size_t size() const { return bytes_; }
  const std::string& name() const { return name_; }

 private:
  void Reset();

  void* addr_ = nullptr;
  size_t bytes_ = 0;
  std::string name_;
  bool owns_name_ = false;  // creator side, not yet unlinked
};

}  // namespace cpu
}  // namespace hvda
