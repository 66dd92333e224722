// The example device's collective library: a full mesh of TCP connections
// (one per pair of ranks) and one primitive, Exchange, that moves bytes
// between them. collectives.cc builds every collective on Exchange.
//
// No message carries a header (beyond the hello at set-up): the byte stream
// between two ranks stays aligned because every rank issues the same
// collectives in the same order (plugin.h "threading"), so both ends agree
// on the size and order of every message. Once an Exchange failed half way,
// that is no longer true: the communicator is broken for good.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "horovod_accel/plugin.h"

namespace example {

// What a unique id holds. On the wire: kMeshIdBytes bytes, big-endian, a
// magic first. No file descriptor: an id must mean the same on every host.
struct MeshId {
  uint32_t ip = 0;     // rank 0's listener: IPv4 address (host order) ...
  uint16_t port = 0;   // ... and TCP port
  uint32_t pid = 0;    // the process that made the id (it will be rank 0)
  uint64_t nonce = 0;  // random; keys that process's listener table, and
                       // every hello must carry it (strays are dropped)
};
constexpr size_t kMeshIdBytes = 64;
void EncodeMeshId(const MeshId& id, void* bytes);
hvda_status DecodeMeshId(const void* bytes, size_t size, MeshId* id);

// One message of an Exchange: `bytes` from `data` to rank `peer`, or into
// `data` from rank `peer`. The buffers must stay valid during the call.
struct SendSpan {
  int peer;
  const void* data;
  size_t bytes;
};
struct RecvSpan {
  int peer;
  void* data;
  size_t bytes;
};

class Mesh {
 public:
  // Connects `nranks` processes into a mesh (mesh_setup.cc): blocks until
  // every rank is connected and has said so, or until init_timeout_seconds
  // (HVDA_TIMEOUT; <= 0: no limit). Rank 0 passes the id's listening socket
  // (borrowed: the caller still owns it); other ranks pass -1.
  // op_timeout_seconds bounds each later Exchange (0: no limit).
  static hvda_status Connect(const MeshId& id, int listener, int nranks, int rank,
                             double init_timeout_seconds, double op_timeout_seconds,
                             std::shared_ptr<Mesh>* out);
  ~Mesh();  // closes the sockets
  Mesh(const Mesh&) = delete;
  Mesh& operator=(const Mesh&) = delete;

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(fds_.size()); }

  // Performs every send and receive together, progressing all of them with
  // non-blocking sockets and poll(), so no order of sizes can deadlock. Per
  // peer, sends go out (and receives fill) in the order listed. Blocks until
  // all are done; at most the op timeout from the call (HVDA_TIMEOUT). A
  // closed or reset peer, or comm_abort, is HVDA_REMOTE_ERROR. Any failure
  // breaks the communicator (AsyncError), and later Exchanges fail at once.
  // `what` names the collective in messages. Exchanges of one mesh run one
  // at a time, in the order they get here; the caller makes that order the
  // same on every rank (one stream per communicator: collectives.cc).
  hvda_status Exchange(const char* what, const std::vector<SendSpan>& sends,
                       const std::vector<RecvSpan>& recvs);

  // comm_abort: marks the mesh aborted and shuts every socket down, so that
  // a blocked Exchange ends at once and later ones fail at once. Never
  // blocks; safe from any thread, also while an Exchange runs.
  void Abort();

  // HVDA_OK, or the error that broke the mesh (message: last_error).
  hvda_status AsyncError();

 private:
  Mesh(int rank, int nranks, double op_timeout_seconds);
  hvda_status Break(hvda_status status, const std::string& message);

  const int rank_;
  const double op_timeout_seconds_;
  std::vector<int> fds_;  // fds_[peer]; -1 for this rank itself
  std::mutex exchange_mu_;  // one Exchange at a time (see Exchange)
  std::atomic<bool> aborted_{false};
  std::mutex error_mu_;
  hvda_status error_ = HVDA_OK;
  std::string error_message_;
};

}  // namespace example
