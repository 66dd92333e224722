// The "gloo" CPU collective backend: Gloo's TCP algorithms over a Gloo
// context of its own (separate from the controller's), for any host layout.
//
// Threading: one caller at a time (the process set's background thread).
// Failure: Gloo reports peer loss and timeouts by exception; every call is
// caught and turned into Status::Aborted, after which the backend refuses
// further collectives (the context's pairs are in an unknown state).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gloo/context.h>

#include "common/hal/collective_backend.h"

namespace hvda {
namespace cpu {

class GlooBackend : public CollectiveBackend {
 public:
  // Collective over spec's ranks: connects a full mesh under spec.prefix
  // (which must be unique to this backend) and blocks until every rank has
  // connected or spec.timeout_seconds pass. `iface` as in CreateGlooContext
  // ("" = loopback when every rank is on this host, else the hostname).
  static Status Create(const CommunicatorSpec& spec, const std::string& iface,
                       std::unique_ptr<CollectiveBackend>* out);

  const char* name() const override { return "gloo"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool Supports(CollectiveKind kind, DataType dtype, ReduceOp op) const override;

  // Host-synchronous: each runs at once and returns when done; `stream` is
  // ignored (the CPU device's streams are always drained; may be null).
  Status Allreduce(void* buffer, int64_t count, DataType dtype, ReduceOp op,
                   Stream* stream) override;
  Status Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes_per_rank,
                    Stream* stream) override;
  Status Broadcast(void* buffer, int64_t bytes, int root, Stream* stream) override;
  Status Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                   const std::vector<int64_t>& recv_bytes, Stream* stream) override;
  Status Reducescatter(const void* in, void* out, const std::vector<int64_t>& counts_per_rank,
                       DataType dtype, ReduceOp op, Stream* stream) override;
  Status Barrier(Stream* stream) override;

 private:
  GlooBackend(std::shared_ptr<gloo::Context> ctx, const CommunicatorSpec& spec);

  // Runs fn (which calls into Gloo) and converts an exception into Aborted
  // naming `op`; fn runs only while the backend is healthy.
  template <typename Fn>
  Status Guard(const char* op, Fn&& fn);
  Status CheckVector(const char* op, size_t n) const;
  uint32_t NextTag() { return tag_++; }

  std::shared_ptr<gloo::Context> ctx_;
  int rank_;
  int size_;
  std::string prefix_;
  double timeout_seconds_;
  uint32_t tag_ = 0;  // per-op Gloo tag; every rank advances it identically
  bool failed_ = false;
  std::vector<char> scratch_;  // Reducescatter receive area, grown on demand
};

}  // namespace cpu
}  // namespace hvda
