// Executor: runs the responses of one process set on this rank's device
// through the first collective backend (in configured order) that supports
// the operation, and completes the Works of the tensors involved.
//
// Every step of a response (fusion-buffer packing, scaling, the collective,
// unpacking) is enqueued on the executor's communication stream; an event
// recorded after it tells when the response has run (NOTE [Streams on the
// HAL] in hal/device.h). On the CPU that is at once; on an asynchronous
// device the Works complete from PollCompletions(), in order.
//
// Used only by the background thread.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "common/hal/collective_backend.h"
#include "common/hal/device.h"
#include "common/message.h"
#include "common/tensor_queue.h"
#include "common/timeline.h"

namespace hvda {

class Executor {
 public:
  // device: borrowed, outlives the executor. backends: in preference order.
  // timeline: may be null. Check status() before use.
  Executor(Device* device, std::vector<std::unique_ptr<CollectiveBackend>> backends,
           Timeline* timeline);
  ~Executor();

  // Whether construction (the communication stream) succeeded.
  const Status& status() const { return init_status_; }

  // Enqueues r for the entries of `queue` it names (entries this rank lacks,
  // e.g. after join(), contribute zeros). Their Works complete once the
  // device has run it: here when it already has, else in PollCompletions().
  // Returns a non-OK Status only when the communicator or device is broken
  // (a peer was lost): the caller must then fail everything.
  Status Execute(const Response& r, TensorQueue* queue);

  // Completes, in order, the Works of responses the device has finished.
  // Never blocks. Non-OK when the device failed running one (its Works and
  // every later one fail with that error).
  Status PollCompletions();
  // Whether some executed response has not completed yet.
  bool HasInflight() const { return !inflight_.empty(); }

  const std::vector<std::unique_ptr<CollectiveBackend>>& backends() const { return backends_; }

  // Outputs whose size depends on other ranks (allgather, alltoall) go to
  // device memory of `device` (a DeviceBuffer) instead of host memory: for
  // executors of accelerator devices. Shared so outputs can outlive us.
  void set_output_device(std::shared_ptr<Device> device) { output_device_ = std::move(device); }

  // Called (from a device-runtime thread; must not block) whenever in-flight
  // work may have finished, on devices with host callbacks: the runtime
  // wakes its background thread to PollCompletions instead of running
  // negotiation cycles while work is in flight.
  void set_progress_notifier(std::function<void()> notify) { notify_ = std::move(notify); }
  // Whether completions are announced by the notifier (else: poll).
  bool NotifiesCompletion() const { return notify_ && device_->execution().SupportsHostFunc(); }

  // The watchdog of asynchronous devices (NOTE [Accelerator watchdog]): an
  // error when a backend reports an asynchronous error or the oldest
  // in-flight response has run longer than timeout_seconds. Never blocks.
  Status CheckHealth(double timeout_seconds) const;
  // Waits up to grace_seconds for in-flight work to finish, then aborts
  // every backend's communicator so nothing waits for a lost peer, and
  // fails what is still in flight with st.
  void DrainOrAbort(double grace_seconds, const Status& st);

 private:
  CollectiveBackend* Pick(CollectiveKind kind, DataType dtype, ReduceOp op) const;
  Status NoBackend(CollectiveKind kind, const Response& r) const;
  Status EnsureFusionBuffer(size_t bytes);
  // Fused-buffer helpers for allreduce and Adasum. Pack points *buf at the
  // single entry's output (direct: input copied there) or at the fusion
  // buffer holding every entry's input (zeros for entries this rank lacks);
  // Unpack copies the fusion buffer back to the outputs this rank has.
  Status Pack(const Response& r, std::vector<TensorEntry>& entries, const std::vector<bool>& have,
              void** buf, bool* direct);
  Status Unpack(const Response& r, std::vector<TensorEntry>& entries,
                const std::vector<bool>& have);
  // NOTE [Reducing in place of the caller]: r's tensors as spans for
  // CollectiveBackend::AllreduceSpans, if they qualify (else false).
  bool SpansFor(const Response& r, const std::vector<TensorEntry>& entries,
                const std::vector<bool>& have, std::vector<CollectiveBackend::Span>* spans);
  Status Allreduce(const Response& r, std::vector<TensorEntry>& entries, std::vector<bool>& have);
  // Adasum (reduce_op kAdasum): allgather + local tree; NOTE [Adasum on CPU].
  Status Adasum(const Response& r, std::vector<TensorEntry>& entries, std::vector<bool>& have);
  Status Allgather(const Response& r, TensorEntry& e);
  Status Broadcast(const Response& r, TensorEntry& e);
  Status Alltoall(const Response& r, TensorEntry& e);
  Status Reducescatter(const Response& r, TensorEntry& e);
  void Begin(const Response& r, const char* activity);
  // Timeline activity <BACKEND>_<what> for r's tensors.
  void Begin(const Response& r, const CollectiveBackend& backend, const char* what);
  void End(const Response& r);
  // Records an event after r's work and completes `entries` with st once it
  // has run (at once when it already has).
  Status Finish(std::vector<TensorEntry> entries, std::vector<bool> have, Status st);

  // Orders the communication stream after the framework streams the
  // entries' inputs were produced on (events recorded at enqueue).
  Status WaitReady(const std::vector<TensorEntry>& entries, const std::vector<bool>& have);
  // Memory for an output of `bytes` whose size depends on other ranks (set
  // e.work->output_shape first): the framework's buffer when the op came with
  // an OutputAllocator, else a HostBuffer, or a DeviceBuffer on accelerator
  // executors.
  Status AllocateOutput(size_t bytes, TensorEntry& e, void** data);

  // A response whose work is enqueued but has not run yet.
  struct Inflight {
    std::unique_ptr<Event> done;
    std::vector<TensorEntry> entries;  // those this rank had
    std::chrono::steady_clock::time_point started;
  };

  Device* device_;
  std::shared_ptr<Device> output_device_;  // see set_output_device
  std::function<void()> notify_;           // see set_progress_notifier
  static void NotifyThunk(void* self) { static_cast<Executor*>(self)->notify_(); }
  Status init_status_;
  std::unique_ptr<Stream> stream_;  // the communication stream
  std::vector<std::unique_ptr<CollectiveBackend>> backends_;
  Timeline* timeline_;
  void* fusion_ = nullptr;  // device memory owned here; reused in stream order
  size_t fusion_bytes_ = 0;
  std::deque<Inflight> inflight_;           // in execution order
  std::vector<std::unique_ptr<Event>> spare_events_;
};

}  // namespace hvda
