// A single-producer single-consumer byte ring in shared memory: how one rank
// streams bytes to another (src -> dst, one per ordered pair). Bytes arrive
// in the order they were written; message boundaries are the caller's
// (every rank derives the same sizes from the same calls).
//
// head counts bytes ever written (stored only by the producer), tail bytes
// ever consumed (stored only by the consumer); the data is at offset
// (position mod capacity). Release/acquire on head and tail order the data
// copies; the atomics are lock-free, hence valid across processes.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace hvda_emu {

struct alignas(64) ChannelControl {
  std::atomic<uint64_t> head;
  char pad0[64 - sizeof(std::atomic<uint64_t>)];
  std::atomic<uint64_t> tail;
  char pad1[64 - sizeof(std::atomic<uint64_t>)];
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared-memory atomics must be lock-free");

// A process-local view; copyable, stateless (all state is in shared memory).
// One thread at a time produces and one consumes (a communicator runs one
// stream operation at a time).
class Channel {
 public:
  Channel() = default;
  Channel(ChannelControl* control, char* data, size_t capacity)
      : ctl_(control), data_(data), cap_(capacity) {}

  size_t capacity() const { return cap_; }

  // Producer: copies up to n bytes in; returns how many fit.
  size_t Write(const char* src, size_t n) {
    const uint64_t head = ctl_->head.load(std::memory_order_relaxed);
    const uint64_t used = head - ctl_->tail.load(std::memory_order_acquire);
    n = std::min<uint64_t>(n, cap_ - used);
    if (n == 0) return 0;
    const size_t off = static_cast<size_t>(head % cap_);
    const size_t first = std::min(n, cap_ - off);
    std::memcpy(data_ + off, src, first);
    std::memcpy(data_, src + first, n - first);
    ctl_->head.store(head + n, std::memory_order_release);
    return n;
  }

  // Consumer: bytes written and not yet consumed.
  size_t Readable() const {
    return static_cast<size_t>(ctl_->head.load(std::memory_order_acquire) -
                               ctl_->tail.load(std::memory_order_relaxed));
  }

  // Consumer: the next n (<= Readable()) bytes, in place when contiguous,
  // else copied to scratch (n bytes); valid until Consume.
  const char* Peek(size_t n, char* scratch) const {
    const size_t off = static_cast<size_t>(ctl_->tail.load(std::memory_order_relaxed) % cap_);
    if (off + n <= cap_) return data_ + off;
    const size_t first = cap_ - off;
    std::memcpy(scratch, data_ + off, first);
    std::memcpy(scratch + first, data_, n - first);
    return scratch;
  }

  void Consume(size_t n) {
    ctl_->tail.store(ctl_->tail.load(std::memory_order_relaxed) + n, std::memory_order_release);
  }

  // Consumer: copies up to n readable bytes out; returns how many.
  size_t Read(char* dst, size_t n) {
    n = std::min(n, Readable());
    if (n == 0) return 0;
    const size_t off = static_cast<size_t>(ctl_->tail.load(std::memory_order_relaxed) % cap_);
    const size_t first = std::min(n, cap_ - off);
    std::memcpy(dst, data_ + off, first);
    std::memcpy(dst + first, data_, n - first);
    Consume(n);
    return n;
  }

 private:
  ChannelControl* ctl_ = nullptr;
  char* data_ = nullptr;
  size_t cap_ = 0;
};

}  // namespace hvda_emu
