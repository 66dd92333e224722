// An emulated stream: one worker thread running a FIFO of operations
// (closures) later and in order. Positions count operations: the n-th
// operation enqueued has position n; position p is "reached" once the first
// p operations ran. Events and waits are built on positions.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace hvda_emu {

class Stream {
 public:
  // delay_us: the worker sleeps that long before each operation
  // (HVDA_EMU_STREAM_DELAY_US), so work that does not wait for this
  // stream's work deterministically sees it undone.
  Stream(int device, unsigned delay_us);
  // Shutdown(). The runtime shuts a stream down before it drops the
  // handle's reference, so the last reference never goes inside one of the
  // stream's own operations (a thread cannot join itself).
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int device() const { return device_; }

  // Appends op; returns its position. Never blocks. op runs on the worker
  // thread and must not throw; it may block (a collective waits for peers).
  uint64_t Enqueue(std::function<void()> op);
  // The position of the last operation enqueued so far (0: none).
  uint64_t Position() const;
  bool Reached(uint64_t position) const;
  // Blocks until `position` is reached.
  void WaitFor(uint64_t position) const;
  // Blocks until everything enqueued so far ran.
  void Synchronize() const { WaitFor(Position()); }
  // Blocks until everything enqueued ran, then stops the worker; idempotent.
  // Later Enqueue calls are a programming error (the runtime's handle table
  // prevents them).
  void Shutdown();

 private:
  void Run();

  const int device_;
  const unsigned delay_us_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;          // signalled on Enqueue and Shutdown
  mutable std::condition_variable done_cv_;  // signalled after every operation
  std::deque<std::function<void()>> queue_;
  uint64_t enqueued_ = 0;
  uint64_t completed_ = 0;
  bool stopping_ = false;
  std::thread worker_;
};

// An event: a captured stream position (Record). Never recorded = complete.
// Thread-safe.
class Event {
 public:
  void Record(std::shared_ptr<Stream> stream);
  // The captured stream and position; stream is null when never recorded.
  void Captured(std::shared_ptr<Stream>* stream, uint64_t* position) const;
  bool Complete() const;
  void Synchronize() const;  // blocks until complete

 private:
  mutable std::mutex mu_;
  std::shared_ptr<Stream> stream_;
  uint64_t position_ = 0;
};

}  // namespace hvda_emu
