#include "shm_segment.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "config.h"
#include "emu_core.h"

namespace hvda_emu {
namespace {

constexpr uint64_t kSegmentMagic = 0x3176656d75616468ull;  // "hdauemv1"
constexpr size_t kPage = 4096;

struct SegmentHeader {
  std::atomic<uint64_t> magic;  // stored last (release) by rank 0 once the rest is set
  uint64_t total_bytes;
  uint64_t channel_bytes;
  int32_t nranks;
  std::atomic<int32_t> arrived;
};

struct alignas(64) RankSlot {
  std::atomic<int32_t> pid;  // 0 until the rank registered
};

size_t AlignPage(size_t n) { return (n + kPage - 1) / kPage * kPage; }

struct Layout {
  size_t slots, controls, data, total;
};

Layout LayoutFor(int n, size_t channel_bytes) {
  const size_t pairs = static_cast<size_t>(n) * static_cast<size_t>(n);
  Layout l;
  l.slots = AlignPage(sizeof(SegmentHeader));
  l.controls = l.slots + AlignPage(sizeof(RankSlot) * static_cast<size_t>(n));
  l.data = l.controls + AlignPage(sizeof(ChannelControl) * pairs);
  l.total = l.data + pairs * channel_bytes;
  return l;
}

size_t FloorPow2(size_t x) {
  size_t p = 1;
  while (p * 2 <= x) p *= 2;
  return p;
}

std::string Errno(const char* what, const std::string& name) {
  return std::string(what) + " '/dev/shm" + name + "' failed: " + std::strerror(errno);
}

using Clock = std::chrono::steady_clock;

bool Expired(Clock::time_point deadline) { return Clock::now() >= deadline; }
void Nap() { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }

// Rank 0: creates and fills the segment. Returns its mapping or null.
char* Create(const std::string& name, int nranks, int* code, std::string* error) {
  const size_t channel_bytes = ShmSegment::ChannelBytesFor(nranks);
  const Layout l = LayoutFor(nranks, channel_bytes);
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    *code = errno == EEXIST ? kCclInvalidUsage : kCclSystem;
    *error = errno == EEXIST ? "two ranks 0 use one unique id, or the id is reused while a "
                               "communicator is still initialising with it ('/dev/shm" + name +
                               "' exists)"
                             : Errno("creating", name);
    return nullptr;
  }
  // Reserve the memory now: a full /dev/shm fails here, not with SIGBUS later.
  int rc = posix_fallocate(fd, 0, static_cast<off_t>(l.total));
  void* base = rc == 0 ? mmap(nullptr, l.total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                       : MAP_FAILED;
  if (base == MAP_FAILED) {
    if (rc != 0) errno = rc;
    *code = kCclSystem;
    *error = Errno(rc != 0 ? "reserving memory for" : "mapping", name);
    close(fd);
    shm_unlink(name.c_str());
    return nullptr;
  }
  close(fd);
  auto* h = static_cast<SegmentHeader*>(base);
  h->total_bytes = l.total;
  h->channel_bytes = channel_bytes;
  h->nranks = nranks;
  h->magic.store(kSegmentMagic, std::memory_order_release);
  return static_cast<char*>(base);
}

// Other ranks: waits until rank 0 created the segment, then maps it.
char* Open(const std::string& name, int nranks, Clock::time_point deadline, size_t* total,
           int* code, std::string* error) {
  int fd;
  while ((fd = shm_open(name.c_str(), O_RDWR, 0)) < 0) {
    if (errno != ENOENT) {
      *code = kCclSystem;
      *error = Errno("opening", name);
      return nullptr;
    }
    if (Expired(deadline)) {
      *code = kCclSystem;
      *error = "rank 0 never created the communicator's segment";
      return nullptr;
    }
    Nap();
  }
  for (;;) {  // rank 0 may not have sized and filled it yet
    struct stat st;
    if (fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= sizeof(SegmentHeader)) {
      void* head = mmap(nullptr, sizeof(SegmentHeader), PROT_READ, MAP_SHARED, fd, 0);
      if (head != MAP_FAILED) {
        const auto* h = static_cast<const SegmentHeader*>(head);
        const bool ready = h->magic.load(std::memory_order_acquire) == kSegmentMagic;
        const size_t bytes = h->total_bytes;
        const int n = h->nranks;
        munmap(head, sizeof(SegmentHeader));
        if (ready) {
          if (n != nranks) {
            close(fd);
            *code = kCclInvalidUsage;
            *error = "rank 0 initialised the communicator with nranks " + std::to_string(n) +
                     ", this rank with " + std::to_string(nranks);
            return nullptr;
          }
          void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
          close(fd);
          if (base == MAP_FAILED) {
            *code = kCclSystem;
            *error = Errno("mapping", name);
            return nullptr;
          }
          *total = bytes;
          return static_cast<char*>(base);
        }
      }
    }
    if (Expired(deadline)) {
      close(fd);
      *code = kCclSystem;
      *error = "rank 0 created the communicator's segment but never finished initialising it";
      return nullptr;
    }
    Nap();
  }
}

}  // namespace

size_t ShmSegment::ChannelBytesFor(int nranks) {
  const size_t configured = GetConfig().channel_bytes;
  if (configured != 0) return FloorPow2(configured < 4096 ? 4096 : configured);
  const size_t n = static_cast<size_t>(nranks < 1 ? 1 : nranks);
  const size_t fit = FloorPow2((4u << 20) / n);
  return fit > (1u << 20) ? (1u << 20) : (fit < (64u << 10) ? (64u << 10) : fit);
}

std::unique_ptr<ShmSegment> ShmSegment::Attach(const std::string& name, int nranks, int rank,
                                               double timeout_s, int* code, std::string* error) {
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  size_t total = 0;
  char* base = nullptr;
  if (rank == 0) {
    base = Create(name, nranks, code, error);
    if (base != nullptr) total = reinterpret_cast<SegmentHeader*>(base)->total_bytes;
  } else {
    base = Open(name, nranks, deadline, &total, code, error);
  }
  if (base == nullptr) return nullptr;
  std::unique_ptr<ShmSegment> seg(new ShmSegment(base, total, nranks));

  auto* header = reinterpret_cast<SegmentHeader*>(base);
  const Layout l = LayoutFor(nranks, header->channel_bytes);
  auto* slots = reinterpret_cast<RankSlot*>(base + l.slots);
  int32_t expected = 0;
  if (!slots[rank].pid.compare_exchange_strong(expected, static_cast<int32_t>(getpid()))) {
    *code = kCclInvalidUsage;
    *error = "rank " + std::to_string(rank) + " joined twice (pid " + std::to_string(expected) +
             " has it): every process needs its own rank";
    return nullptr;
  }
  header->arrived.fetch_add(1, std::memory_order_acq_rel);
  while (header->arrived.load(std::memory_order_acquire) < nranks) {
    if (Expired(deadline)) {
      char msg[256];
      std::snprintf(msg, sizeof(msg),
                    "%d of %d ranks arrived within HVDA_EMU_INIT_TIMEOUT_SECONDS=%g s: check that "
                    "every rank calls CommInitRank with the same unique id and nranks",
                    header->arrived.load(), nranks, timeout_s);
      *code = kCclSystem;
      *error = msg;
      shm_unlink(name.c_str());  // the communicator cannot form any more
      return nullptr;
    }
    Nap();
  }
  if (rank == 0) shm_unlink(name.c_str());  // everyone has it mapped
  return seg;
}

std::unique_ptr<ShmSegment> ShmSegment::CreatePrivate() {
  const size_t channel_bytes = ChannelBytesFor(1);
  const Layout l = LayoutFor(1, channel_bytes);
  void* base = mmap(nullptr, l.total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return nullptr;
  auto* h = static_cast<SegmentHeader*>(base);
  h->total_bytes = l.total;
  h->channel_bytes = channel_bytes;
  h->nranks = 1;
  h->arrived.store(1);
  reinterpret_cast<RankSlot*>(static_cast<char*>(base) + l.slots)->pid.store(getpid());
  h->magic.store(kSegmentMagic);
  return std::unique_ptr<ShmSegment>(new ShmSegment(static_cast<char*>(base), l.total, 1));
}

ShmSegment::ShmSegment(char* base, size_t bytes, int nranks)
    : base_(base), bytes_(bytes), nranks_(nranks) {}

ShmSegment::~ShmSegment() { munmap(base_, bytes_); }

Channel ShmSegment::Link(int src, int dst) const {
  const auto* header = reinterpret_cast<const SegmentHeader*>(base_);
  const size_t cap = header->channel_bytes;
  const Layout l = LayoutFor(nranks_, cap);
  const size_t pair = static_cast<size_t>(src) * static_cast<size_t>(nranks_) +
                      static_cast<size_t>(dst);
  auto* controls = reinterpret_cast<ChannelControl*>(base_ + l.controls);
  return Channel(&controls[pair], base_ + l.data + pair * cap, cap);
}

int ShmSegment::RankPid(int rank) const {
  const Layout l = LayoutFor(nranks_, reinterpret_cast<const SegmentHeader*>(base_)->channel_bytes);
  return reinterpret_cast<const RankSlot*>(base_ + l.slots)[rank].pid.load();
}

bool ShmSegment::RankAlive(int rank) const {
  const pid_t pid = RankPid(rank);
  if (pid == getpid()) return true;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  // A killed process nobody has reaped yet still answers kill(): a zombie.
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return errno != ENOENT;
  char buf[512];
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* close_paren = std::strrchr(buf, ')');  // the command name may hold spaces
  return close_paren == nullptr || close_paren[1] == '\0' ||
         (close_paren[2] != 'Z' && close_paren[2] != 'X');
}

}  // namespace hvda_emu
