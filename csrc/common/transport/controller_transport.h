// The few collective primitives the coordinator protocol needs, over the
// ranks of one process set. Implementations: Gloo (now), MPI (later).
//
// Every call is collective (all ranks of the set, same order) and blocking.
// A peer failure or a timeout returns a non-OK Status.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/util/status.h"

namespace hvda {

class ControllerTransport {
 public:
  virtual ~ControllerTransport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Rank 0 receives every rank's bytes in (*all)[rank]; other ranks get an
  // empty vector.
  virtual Status Gather(const std::string& mine, std::vector<std::string>* all) = 0;
  // Rank 0's *bytes replace *bytes on every other rank.
  virtual Status Broadcast(std::string* bytes) = 0;
  // Element-wise bitwise AND across ranks, in place. Same length everywhere.
  virtual Status BitAnd(std::vector<uint64_t>* bits) = 0;
  // Between exchanges, on the thread that runs them: may a peer already wait
  // in an exchange this rank has not entered? Never blocks; true when the
  // transport cannot tell (NOTE [Quiet cycles] in generation_cycles.cc).
  virtual bool PeerMayWait() const { return true; }
};

}  // namespace hvda
