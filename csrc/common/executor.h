// Executor: runs the responses of one process set on this rank's device
// through the first collective backend (in configured order) that supports
// the operation, and completes the Works of the tensors involved.
//
// Used only by the background thread.
#pragma once

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
  // timeline: may be null.
  Executor(Device* device, std::vector<std::unique_ptr<CollectiveBackend>> backends,
           Timeline* timeline);
  ~Executor();

  // Executes r for the entries of `queue` it names (entries this rank lacks,
  // e.g. after join(), contribute zeros). Completes those Works. Returns a
  // non-OK Status only when the communicator is broken (a peer was lost): the
  // caller must then fail everything.
  Status Execute(const Response& r, TensorQueue* queue);

  const std::vector<std::unique_ptr<CollectiveBackend>>& backends() const { return backends_; }

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
  Status Allreduce(const Response& r, std::vector<TensorEntry>& entries, std::vector<bool>& have);
  // Adasum (reduce_op kAdasum): allgather + local tree; NOTE [Adasum on CPU].
  Status Adasum(const Response& r, std::vector<TensorEntry>& entries, std::vector<bool>& have);
  Status Allgather(const Response& r, TensorEntry& e);
  Status Broadcast(const Response& r, TensorEntry& e);
  Status Alltoall(const Response& r, TensorEntry& e);
  Status Reducescatter(const Response& r, TensorEntry& e);
  void Begin(const Response& r, const char* activity);
  void End(const Response& r);

  Device* device_;
  std::vector<std::unique_ptr<CollectiveBackend>> backends_;
  Timeline* timeline_;
  void* fusion_ = nullptr;  // device memory owned here
  size_t fusion_bytes_ = 0;
};

}  // namespace hvda
