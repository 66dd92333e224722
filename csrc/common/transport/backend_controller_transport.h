// ControllerTransport over a HAL CollectiveBackend of the same process set.
//
// Used when a backend is much cheaper than Gloo's TCP for the tiny messages of
// negotiation (the shm backend: a cycle's bit vector crosses in a few
// microseconds instead of a loopback round trip). Control and data traffic
// then share the backend, which is safe because the background thread issues
// both in the same order on every rank (negotiate, then execute).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/hal/collective_backend.h"
#include "common/transport/controller_transport.h"

namespace hvda {

class BackendControllerTransport : public ControllerTransport {
 public:
  // backend: borrowed; must outlive this transport and be used only from the
  // thread that calls this transport.
  explicit BackendControllerTransport(CollectiveBackend* backend);
  // Owning: a backend of its own (e.g. the mpi controller's communicator
  // when the data plane does not use MPI).
  explicit BackendControllerTransport(std::unique_ptr<CollectiveBackend> owned);
  int rank() const override { return backend_->rank(); }
  int size() const override { return backend_->size(); }
  Status Gather(const std::string& mine, std::vector<std::string>* all) override;
  Status Broadcast(std::string* bytes) override;
  Status BitAnd(std::vector<uint64_t>* bits) override;
  bool PeerMayWait() const override { return backend_->PeerAhead(); }

 private:
  // Every rank's message, in rank order: one fixed-size frame per rank
  // carrying the length and the head, and a second exchange only when some
  // message does not fit its frame.
  Status AllgatherMessages(const std::string& mine, std::vector<std::string>* all);

  std::unique_ptr<CollectiveBackend> owned_;  // null when borrowed
  CollectiveBackend* backend_;
  std::vector<char> frames_;          // scratch: size() frames
  std::vector<uint64_t> bits_all_;    // scratch of BitAnd: every rank's vector
  std::vector<int64_t> bits_sizes_;   // scratch of BitAnd: bytes per rank
};

}  // namespace hvda
