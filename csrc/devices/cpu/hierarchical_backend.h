// HierarchicalBackend: the CPU backend of a communicator whose ranks span
// hosts. Allreduce and allgather can run in two levels, as upstream's
// HOROVOD_HIERARCHICAL_ALLREDUCE / HOROVOD_HIERARCHICAL_ALLGATHER: shared
// memory (ShmBackend) among the ranks of each host, and Gloo between one rank
// per host (the host's "root": its first rank in communicator order). Every
// other op, and those two when their level is off, runs on a flat Gloo
// backend over all ranks.
//
//   allreduce: shm allreduce on each host -> Gloo allreduce among the roots
//              -> shm broadcast from the root on each host;
//   allgather: shm allgatherv on each host -> Gloo allgatherv of the hosts'
//              blocks among the roots -> shm broadcast of the result.
// So the network carries one stream per host instead of one per rank, and
// ranks on one host never talk over TCP. Layouts may be uneven (hosts with
// different rank counts) and need not be contiguous in rank order.
//
// Failure: any level's error is returned (a peer lost on another host
// surfaces on the roots as a Gloo error and on the other ranks as the shm
// broadcast's peer-death or timeout error); a part that failed refuses
// further work, and the runtime ends the job's generation. Timeouts: each level waits at most
// spec.timeout_seconds, so the shm broadcast also bounds how long the
// roots' network step may take.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/hal/collective_backend.h"

namespace hvda {
namespace cpu {

struct HierarchicalLevels {
  bool allreduce = false;
  bool allgather = false;
};

class HierarchicalBackend : public CollectiveBackend {
 public:
  // Whether spec's ranks span more than one host with more than one rank on
  // at least one of them (otherwise there is no hierarchy to use). Same
  // answer on every rank.
  static bool HasHierarchy(const CommunicatorSpec& spec);

  // Collective over spec's ranks: creates the flat Gloo backend (prefix
  // spec.prefix + "flat/"), then the shm backend of this rank's host (when it
  // has more than one rank) and, on roots, the Gloo backend among the roots.
  // `iface` as in CreateGlooContext; shm_segment_bytes as in ShmBackend.
  static Status Create(const CommunicatorSpec& spec, const std::string& iface,
                       int64_t shm_segment_bytes, HierarchicalLevels levels,
                       std::unique_ptr<CollectiveBackend>* out);

  // Its own name (timeline activities HIERARCHICAL_*, backend reports),
  // though HOROVOD_CPU_OPERATIONS selects it as "gloo".
  const char* name() const override { return "hierarchical"; }
  int rank() const override { return flat_->rank(); }
  int size() const override { return flat_->size(); }
  bool Supports(CollectiveKind kind, DataType dtype, ReduceOp op) const override {
    return flat_->Supports(kind, dtype, op);
  }

  // Host-synchronous, like the backends it is made of.
  Status Allreduce(void* buffer, int64_t count, DataType dtype, ReduceOp op,
                   Stream* stream) override;
  Status Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes_per_rank,
                    Stream* stream) override;
  Status Broadcast(void* buffer, int64_t bytes, int root, Stream* stream) override {
    return flat_->Broadcast(buffer, bytes, root, stream);
  }
  Status Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                   const std::vector<int64_t>& recv_bytes, Stream* stream) override {
    return flat_->Alltoallv(in, send_bytes, out, recv_bytes, stream);
  }
  Status Reducescatter(const void* in, void* out, const std::vector<int64_t>& counts_per_rank,
                       DataType dtype, ReduceOp op, Stream* stream) override {
    return flat_->Reducescatter(in, out, counts_per_rank, dtype, op, stream);
  }
  Status Barrier(Stream* stream) override { return flat_->Barrier(stream); }

 private:
  HierarchicalBackend() = default;

  HierarchicalLevels levels_;
  std::unique_ptr<CollectiveBackend> flat_;   // Gloo over every rank
  std::unique_ptr<CollectiveBackend> local_;  // shm over this host's ranks; null if alone
  std::unique_ptr<CollectiveBackend> roots_;  // Gloo over the hosts' roots; null off roots
  // host_of_[r]: index of communicator rank r's host (hosts numbered in the
  // order of their first rank); hosts_[h]: communicator ranks of host h.
  std::vector<int> host_of_;
  std::vector<std::vector<int>> hosts_;
  bool root_ = false;
  // Allgather staging (grow-only): scratch_ for the host-major result or a
  // non-root's unused host block, block_ for the root's copy of its host block.
  std::vector<char> scratch_;
  std::vector<char> block_;
};

}  // namespace cpu
}  // namespace hvda
