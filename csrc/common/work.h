// Work: the handle of one enqueued operation (replaces upstream's int handles).
// Created by the enqueuing thread, completed exactly once by the background
// thread, waited on by any thread. Shared ownership (std::shared_ptr).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "common/activity_tracker.h"
#include "common/device_buffer.h"
#include "common/dtype.h"
#include "common/generation_end.h"
#include "common/name_reservations.h"
#include "common/output_allocator.h"
#include "common/util/status.h"

namespace hvda {

// Host memory allocated by the core for outputs whose size depends on other
// ranks (allgather, alltoall). Handed to Python zero-copy; freed when the last
// owner (Work or a framework tensor through the buffer protocol) lets go.
class HostBuffer {
 public:
  explicit HostBuffer(size_t bytes);
  ~HostBuffer();
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  void* data() { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

class Work;

// Something that can make progress on a Work from the thread about to block
// on it (NOTE [Inline cycles] in cycle_loop.h: the Generation runs negotiation
// cycles on the waiting thread instead of handing off to its background
// thread). Drive returns once the Work completed, the deadline passed, or
// driving cannot help (the op runs on a device; the job ended); it never
// waits on the Work itself.
class WorkDriver {
 public:
  virtual ~WorkDriver() = default;
  virtual void Drive(const Work& w, std::chrono::steady_clock::time_point deadline) = 0;
};

class Work {
 public:
  Work() = default;
  // tracker: told about waits on and completion of this op (may be null).
  // end: this op's generation (may be null): a failure completed after the
  // generation began to end tells it when delivered (status(), OnComplete
  // callbacks; NOTE [Told of the end] in generation_end.h).
  explicit Work(std::shared_ptr<ActivityTracker> tracker,
                std::shared_ptr<GenerationEnd> end = nullptr)
      : tracker_(std::move(tracker)), end_(std::move(end)) {}

  bool IsCompleted() const;
  // Blocks until completion; timeout_seconds < 0 waits forever. Returns false
  // if the timeout passed first. The tracker counts this thread as blocked
  // meanwhile. With a driver (SetDriver), the waiting thread first lets it
  // make progress.
  bool Wait(double timeout_seconds) const;
  // Set once, at enqueue, before the Work is shared. Weak: a Work may
  // outlive its Generation (Python keeps handles after shutdown).
  void SetDriver(std::weak_ptr<WorkDriver> driver) { driver_ = std::move(driver); }
  // The outcome; meaningful once IsCompleted(). Call it to deliver the
  // outcome to the program (it may tell the generation of its end).
  Status status() const;
  // Runs cb(status) on completion (on the completing thread), or at once if
  // already complete; cb delivers the outcome, as status(). cb must not block.
  void OnComplete(std::function<void(const Status&)> cb);

  // Called once by the background thread, after setting the results below.
  void Complete(Status st);

  // Holds the reservation of this op's name (NOTE [Name reservation]) until
  // ReleaseName() or the Work's destruction. Set once, at enqueue.
  void HoldName(std::shared_ptr<NameReservations> set, const std::string* key) {
    reservation_.Hold(std::move(set), key);
  }
  // Frees the name for a new op (idempotent; the caller is done with the op).
  void ReleaseName() { reservation_.Release(); }

  // Results (written before Complete, read after IsCompleted()).
  std::shared_ptr<HostBuffer> output;
  // Instead of `output` for accelerator tensors (device memory).
  std::shared_ptr<DeviceBuffer> device_output;
  // Set at enqueue (EnqueueArgs::allocate_output): the result goes to the
  // framework's buffer instead of `output` / `device_output`.
  OutputAllocator allocate_output;
  std::vector<int64_t> output_shape;
  DataType output_dtype = DataType::kUInt8;
  std::vector<int64_t> received_splits;
  int32_t join_result = -1;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  // Delivering a failure that completed after the generation began to end
  // tells the generation (news_of_end_ is set by Complete).
  void Delivered(bool failed) const;

  std::shared_ptr<ActivityTracker> tracker_;
  std::shared_ptr<GenerationEnd> end_;
  std::weak_ptr<WorkDriver> driver_;
  bool news_of_end_ = false;  // under mu_: failed after end_ began
  NameReservation reservation_;
  bool done_ = false;
  Status status_;
  std::vector<std::function<void(const Status&)>> callbacks_;
};

}  // namespace hvda
