// TensorQueue: per process set, the operations this rank has enqueued and not
// yet finished. Framework threads Add; the background thread pops the new
// requests each cycle and Takes entries when a response names them.
// Thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/hal/device.h"
#include "common/message.h"
#include "common/name_reservations.h"
#include "common/work.h"

namespace hvda {

struct TensorEntry {
  Request request;
  // Caller-owned memory that stays valid until `work` completes.
  const void* input = nullptr;
  void* output = nullptr;
  std::shared_ptr<Work> work;
  // Accelerator tensors: recorded at enqueue on the framework's stream after
  // the work producing `input`; the communication stream waits for it
  // (never the host). Null for CPU tensors.
  std::shared_ptr<Event> ready;
};

class TensorQueue {
 public:
  // Adds entries atomically (a group is negotiated together) and reserves
  // their names until each entry's Work releases its name (NOTE [Name
  // reservation]). Fails with InvalidArgument, adding nothing, if a name is
  // still reserved by an earlier op or repeated within the group.
  Status Add(std::vector<TensorEntry> entries) { return Add(entries.data(), entries.size()); }
  // The same for entries[0..n) (the per-op path: no vector to allocate). On
  // success the entries are moved into the queue except their `work`, which
  // stays with the caller too (it hands the Works out).
  Status Add(TensorEntry* entries, size_t n);
  // Moves the requests added since the last call into *out (append).
  void PopNewRequests(std::vector<Request>* out);
  // Removes and returns the entry for name; false if this rank has none
  // (e.g. it has joined).
  bool Take(const std::string& name, TensorEntry* out);
  // Completes every queued entry with st and empties the queue.
  void FailAll(const Status& st);
  bool HasNewRequests() const;
  size_t InFlight() const;

 private:
  mutable std::mutex mu_;
  // Shared with the Works holding reservations, which may outlive the queue.
  std::shared_ptr<NameReservations> reserved_ = std::make_shared<NameReservations>();
  std::unordered_map<std::string, TensorEntry> table_;
  std::vector<Request> new_requests_;
};

}  // namespace hvda
