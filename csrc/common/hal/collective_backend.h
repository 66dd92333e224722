// HAL: a collective communication library bound to one communicator (the
// ranks of one process set) on one device kind.
//
// Contract for every collective below:
//  - collective: every rank of the communicator calls it, in the same order;
//  - ordered on `stream` (NOTE [Streams on the HAL] in device.h): it reads
//    its inputs after the work already enqueued there, and work enqueued
//    after it sees its outputs. A host-synchronous backend (the CPU's shm and
//    gloo) runs it at once and returns when done; `stream` is then one of its
//    device's always-drained streams, or null (negotiation traffic);
//  - buffers are device memory of the backend's device, owned by the caller;
//  - counts are elements, byte counts are bytes; zero-length is legal;
//  - a peer failure or timeout returns a non-OK Status (never hangs forever).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/hal/device.h"
#include "common/util/status.h"

namespace hvda {

struct JobSpec;
class Store;

enum class CollectiveKind : int32_t {
  kAllreduce = 0,
  kAllgather = 1,
  kBroadcast = 2,
  kAlltoall = 3,
  kReducescatter = 4,
  kBarrier = 5,
};

class CollectiveBackend {
 public:
  virtual ~CollectiveBackend() = default;
  virtual const char* name() const = 0;  // "shm", "gloo", ...
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Whether this backend implements (kind, dtype, op). op is ignored for
  // non-reducing kinds. Average is never passed (the core does Sum + scale).
  virtual bool Supports(CollectiveKind kind, DataType dtype, ReduceOp op) const = 0;

  // In place: buffer holds this rank's input and receives the reduction.
  virtual Status Allreduce(void* buffer, int64_t count, DataType dtype, ReduceOp op,
                           Stream* stream) = 0;

  // Allreduce of several tensors as if they were one concatenation of
  // spans[0], spans[1], ..., each read from its `in` and written to its
  // `out` where they are, for backends that can (saves the executor's
  // packing into and out of a fusion buffer, two whole memory passes; or,
  // for one out-of-place tensor, the copy of in into out). Every rank passes
  // the same counts in the same order. A span's in and out are either the
  // same pointer (in place) or do not overlap; no two spans' memory
  // overlaps; ins not equal to their out are not modified. Every output is
  // then multiplied by `postscale`, exactly as DeviceExecution::Scale would
  // (1.0: left as reduced), so an Average costs no extra memory pass. Only
  // called when ReducesSpans().
  struct Span {
    const void* in;
    void* out;
    int64_t count;  // elements
  };
  virtual bool ReducesSpans() const { return false; }
  virtual Status AllreduceSpans(const std::vector<Span>& spans, DataType dtype, ReduceOp op,
                                double postscale, Stream* stream) {
    return Status::Unknown(std::string(name()) + " cannot reduce tensors where they are");
  }

  // out = concat over ranks r of (bytes_per_rank[r] bytes of rank r's input).
  // in holds bytes_per_rank[rank()] bytes. out may not alias in.
  virtual Status Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes_per_rank,
                            Stream* stream) = 0;

  // In place; root is a rank of this communicator.
  virtual Status Broadcast(void* buffer, int64_t bytes, int root, Stream* stream) = 0;

  // send_bytes[r] bytes of in (consecutive, in rank order) go to rank r;
  // recv_bytes[r] bytes from rank r land consecutively in out, in rank order.
  virtual Status Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                           const std::vector<int64_t>& recv_bytes, Stream* stream) = 0;

  // in holds sum(counts_per_rank) elements; rank r receives the reduction of
  // its segment (counts_per_rank[r] elements at offset sum(counts[<r])) in out.
  virtual Status Reducescatter(const void* in, void* out,
                               const std::vector<int64_t>& counts_per_rank, DataType dtype,
                               ReduceOp op, Stream* stream) = 0;

  virtual Status Barrier(Stream* stream) = 0;

  // Asynchronous backends (a device plugin's collective library): the
  // communicator's asynchronous error (OK while healthy; never blocks), and
  // Abort, which makes its pending work finish (with undefined results)
  // instead of waiting for a lost peer forever. Host-synchronous backends
  // never have work pending, so the defaults do nothing.
  virtual Status AsyncError() const { return Status::OK(); }
  virtual void Abort() {}

  // Between collectives, on the thread that issues them: may a peer already
  // wait in a collective this rank has not entered yet? Never blocks. The
  // default (cannot tell) is true; a backend that can see its peers' progress
  // (shm: their barrier counters) answers exactly. NOTE [Quiet cycles].
  virtual bool PeerAhead() const { return true; }
};

// How a backend is created for one communicator.
struct CommunicatorSpec {
  Store* store = nullptr;    // borrowed; valid during Create only
  std::string prefix;        // unique store-key prefix for this communicator
  int rank = 0;              // rank within the communicator
  int size = 1;
  std::vector<int> global_ranks;    // global rank of each communicator rank
  // Shared-memory domain of each communicator rank (host name + boot id +
  // mount namespace): equal strings mean the ranks share /dev/shm.
  std::vector<std::string> hosts;
  double timeout_seconds = 30.0;
  // The job (its settings, e.g. shm_segment_bytes, and its MPI under
  // mpirun), for backend-specific options. Borrowed; valid during Create
  // only; may be null (tests), then backends use their defaults.
  const JobSpec* job = nullptr;
  // The device whose memory the backend's buffers are in: null for host
  // (kCPU) backends; for accelerator (kPlugin) backends the bound device.
  // Borrowed; outlives the backend.
  Device* device = nullptr;
};

}  // namespace hvda
