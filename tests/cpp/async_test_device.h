// A test-only asynchronous device on host memory (in the spirit of PyTorch's
// OpenReg): every stream is a worker thread running its queue in order,
// optionally after a delay per item, so work completes *later* than the call
// that enqueued it; events capture a stream's position. It lets the executor's
// stream and event logic (NOTE [Streams on the HAL]) be tested without
// hardware. StreamedBackend enqueues a host-synchronous CPU backend's
// collectives onto such a stream, as a device collective library would.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "common/hal/collective_backend.h"
#include "devices/cpu/host_device.h"

namespace hvda {
namespace testing {

class AsyncStream : public Stream {
 public:
  AsyncStream(std::chrono::microseconds delay, const std::atomic<bool>* held)
      : delay_(delay), held_(held), worker_([this] { Run(); }) {}
  ~AsyncStream() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  // Returns the item's sequence number (1-based).
  uint64_t Enqueue(std::function<Status()> fn) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(fn));
    cv_.notify_all();
    return ++enqueued_;
  }
  uint64_t enqueued() {
    std::lock_guard<std::mutex> lock(mu_);
    return enqueued_;
  }
  // Status of the items up to seq: OK when all ran, or the first error.
  bool Reached(uint64_t seq, Status* st) {
    std::lock_guard<std::mutex> lock(mu_);
    *st = error_;
    return done_ >= seq || !error_.ok();
  }
  void WaitFor(uint64_t seq) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_ >= seq || !error_.ok(); });
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait_for(lock, std::chrono::milliseconds(1),
                   [&] { return stop_ || (!queue_.empty() && !held_->load()); });
      if (stop_ && queue_.empty()) return;
      if (queue_.empty() || held_->load()) continue;
      std::function<Status()> fn = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      std::this_thread::sleep_for(delay_);
      Status st = fn();
      lock.lock();
      if (!st.ok() && error_.ok()) error_ = st;  // sticky, as a device error
      ++done_;
      cv_.notify_all();
    }
  }

  std::chrono::microseconds delay_;
  const std::atomic<bool>* held_;  // while true, nothing runs (owned by AsyncExecution)
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<Status()>> queue_;
  uint64_t enqueued_ = 0, done_ = 0;
  Status error_;
  bool stop_ = false;
  std::thread worker_;
};

class AsyncEvent : public Event {
 public:
  AsyncStream* stream = nullptr;
  uint64_t seq = 0;
};

class AsyncExecution : public DeviceExecution {
 public:
  explicit AsyncExecution(std::chrono::microseconds delay) : delay_(delay) {}
  std::atomic<int> stream_syncs{0};
  // While held, no stream of this device runs anything: the test decides
  // when enqueued work happens, so "not yet complete" is deterministic.
  void Hold(bool held) { held_ = held; }

  Status CreateStream(std::unique_ptr<Stream>* s) override {
    s->reset(new AsyncStream(delay_, &held_));
    return Status::OK();
  }
  Status WrapStream(void*, std::unique_ptr<Stream>* s) override { return CreateStream(s); }
  Status SynchronizeStream(Stream* s) override {
    ++stream_syncs;
    auto* a = static_cast<AsyncStream*>(s);
    a->WaitFor(a->enqueued());
    Status st;
    a->Reached(0, &st);
    return st;
  }
  Status CreateEvent(std::unique_ptr<Event>* e) override {
    e->reset(new AsyncEvent());
    return Status::OK();
  }
  Status RecordEvent(Event* e, Stream* s) override {
    auto* ev = static_cast<AsyncEvent*>(e);
    ev->stream = static_cast<AsyncStream*>(s);
    ev->seq = ev->stream->enqueued();
    return Status::OK();
  }
  Status QueryEvent(Event* e, bool* done) override {
    auto* ev = static_cast<AsyncEvent*>(e);
    Status st;
    *done = ev->stream == nullptr || ev->stream->Reached(ev->seq, &st);
    return st;
  }
  Status SynchronizeEvent(Event* e) override {
    auto* ev = static_cast<AsyncEvent*>(e);
    if (ev->stream) ev->stream->WaitFor(ev->seq);
    return Status::OK();
  }
  Status StreamWaitEvent(Stream* s, Event* e) override {
    auto* ev = static_cast<AsyncEvent*>(e);
    if (ev->stream == nullptr || ev->stream == s) return Status::OK();
    AsyncStream* other = ev->stream;
    uint64_t seq = ev->seq;
    static_cast<AsyncStream*>(s)->Enqueue([other, seq] {
      other->WaitFor(seq);
      return Status::OK();
    });
    return Status::OK();
  }
  Status Scale(void* buf, int64_t count, DataType dtype, double f, Stream* s) override {
    return On(s, [=] { return host_.Scale(buf, count, dtype, f, nullptr); });
  }
  Status ReduceInto(void* d, const void* src, int64_t n, DataType t, ReduceOp op,
                    Stream* s) override {
    return On(s, [=] { return host_.ReduceInto(d, src, n, t, op, nullptr); });
  }
  Status BatchedCopy(const std::vector<CopyDesc>& copies, Stream* s) override {
    return On(s, [this, copies] { return host_.BatchedCopy(copies, nullptr); });
  }
  static Status On(Stream* s, std::function<Status()> fn) {
    static_cast<AsyncStream*>(s)->Enqueue(std::move(fn));
    return Status::OK();
  }

 private:
  std::chrono::microseconds delay_;
  std::atomic<bool> held_{false};
  cpu::HostExecution host_;
};

class AsyncMemory : public cpu::HostMemory {
 public:
  Status CopyAsync(void* d, const void* s, size_t n, Stream* st) override {
    return AsyncExecution::On(st, [=] {
      cpu::HostMemory plain;
      return plain.CopyAsync(d, s, n, nullptr);
    });
  }
  Status CopyToHostAsync(void* d, const void* s, size_t n, Stream* st) override {
    return CopyAsync(d, s, n, st);
  }
  Status CopyFromHostAsync(void* d, const void* s, size_t n, Stream* st) override {
    return CopyAsync(d, s, n, st);
  }
  Status MemsetAsync(void* d, int v, size_t n, Stream* st) override {
    return AsyncExecution::On(st, [=] {
      cpu::HostMemory plain;
      return plain.MemsetAsync(d, v, n, nullptr);
    });
  }
};

class AsyncDevice : public Device {
 public:
  explicit AsyncDevice(std::chrono::microseconds delay) : execution_(delay) {}
  DeviceKind kind() const override { return DeviceKind::kPlugin; }
  std::string name() const override { return "async-test"; }
  DeviceMemory& memory() override { return memory_; }
  DeviceExecution& execution() override { return execution_; }
  AsyncExecution& async() { return execution_; }

 private:
  AsyncMemory memory_;
  AsyncExecution execution_;
};

// Enqueues a host-synchronous backend's collectives on the given AsyncStream.
class StreamedBackend : public CollectiveBackend {
 public:
  explicit StreamedBackend(std::unique_ptr<CollectiveBackend> b) : b_(std::move(b)) {}
  const char* name() const override { return b_->name(); }
  int rank() const override { return b_->rank(); }
  int size() const override { return b_->size(); }
  bool Supports(CollectiveKind k, DataType t, ReduceOp op) const override {
    return b_->Supports(k, t, op);
  }
  Status Allreduce(void* buf, int64_t n, DataType t, ReduceOp op, Stream* s) override {
    return AsyncExecution::On(s, [=] { return b_->Allreduce(buf, n, t, op, nullptr); });
  }
  Status Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes,
                    Stream* s) override {
    return AsyncExecution::On(s, [=] { return b_->Allgatherv(in, out, bytes, nullptr); });
  }
  Status Broadcast(void* buf, int64_t bytes, int root, Stream* s) override {
    return AsyncExecution::On(s, [=] { return b_->Broadcast(buf, bytes, root, nullptr); });
  }
  Status Alltoallv(const void* in, const std::vector<int64_t>& sb, void* out,
                   const std::vector<int64_t>& rb, Stream* s) override {
    return AsyncExecution::On(s, [=] { return b_->Alltoallv(in, sb, out, rb, nullptr); });
  }
  Status Reducescatter(const void* in, void* out, const std::vector<int64_t>& counts, DataType t,
                       ReduceOp op, Stream* s) override {
    return AsyncExecution::On(s, [=] { return b_->Reducescatter(in, out, counts, t, op, nullptr); });
  }
  Status Barrier(Stream* s) override {
    return AsyncExecution::On(s, [=] { return b_->Barrier(nullptr); });
  }

 private:
  std::unique_ptr<CollectiveBackend> b_;
};

}  // namespace testing
}  // namespace hvda
