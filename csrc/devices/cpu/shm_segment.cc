#include "devices/cpu/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace hvda {
namespace cpu {
namespace {

Status Errno(const std::string& what, const std::string& name, int err) {
  return Status::Aborted("shm backend: " + what + " '" + name + "' failed: " +
                         std::strerror(err) +
                         ". Check that /dev/shm is mounted and has room (docker: --shm-size), "
                         "or set HOROVOD_CPU_OPERATIONS=gloo to avoid shared memory.");
}

}  // namespace

ShmSegment::~ShmSegment() { Reset(); }

ShmSegment::ShmSegment(ShmSegment&& other) noexcept { *this = std::move(other); }

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    Reset();
    addr_ = std::exchange(other.addr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    name_ = std::move(other.name_);
    owns_name_ = std::exchange(other.owns_name_, false);
  }
  return *this;
}

void ShmSegment::Reset() {
  Unlink();
  if (addr_ != nullptr) munmap(addr_, bytes_);
  addr_ = nullptr;
  bytes_ = 0;
}

void ShmSegment::Unlink() {
  if (owns_name_) shm_unlink(name_.c_str());
  owns_name_ = false;
}

Status ShmSegment::Create(const std::string& name, size_t bytes, ShmSegment* out) {
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return Errno("shm_open(create)", name, errno);
  ShmSegment seg;
  seg.name_ = name;
  seg.owns_name_ = true;  // from here on, every exit path unlinks
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int err = errno;
    close(fd);
    return Errno("ftruncate", name, err);
  }
  // Reserve the pages now so that a full /dev/shm is an error here, not a
  // SIGBUS in the middle of a collective.
  int err = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (err != 0) {
    close(fd);
    return Errno("posix_fallocate", name, err);
  }
  void* addr = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  err = errno;
  close(fd);
  if (addr == MAP_FAILED) return Errno("mmap", name, err);
  seg.addr_ = addr;
  seg.bytes_ = bytes;
  *out = std::move(seg);
  return Status::OK();
}

Status ShmSegment::Open(const std::string& name, size_t bytes, ShmSegment* out) {
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) return Errno("shm_open", name, errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return Errno("fstat", name, err);
  }
  if (static_cast<size_t>(st.st_size) != bytes) {
    close(fd);
    return Status::InvalidArgument(
        "shm backend: segment '" + name + "' has " + std::to_string(st.st_size) +
        " bytes but this rank expects " + std::to_string(bytes) +
        "; set the same HOROVOD_SHM_SEGMENT_BYTES on every rank.");
  }
  void* addr = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);
  if (addr == MAP_FAILED) return Errno("mmap", name, err);
  ShmSegment seg;
  seg.addr_ = addr;
  seg.bytes_ = bytes;
  seg.name_ = name;
  *out = std::move(seg);
  return Status::OK();
}

}  // namespace cpu
}  // namespace hvda
