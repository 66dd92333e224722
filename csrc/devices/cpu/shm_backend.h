// The "shm" CPU collective backend: ranks on one host exchange data through
// POSIX shared memory instead of TCP.
//
// Layout: every rank creates one segment = [ShmRankControl page | data area
// of segment_bytes], maps every peer's segment, and only ever writes its own.
// The data area is split into two halves used by alternate steps.
//
// NOTE [shm steps]: each collective is a sequence of steps. A step writes
// this rank's half (step % 2), passes at least one barrier, then reads the
// peers' same half. Step k+2 rewrites that half only after passing a barrier
// of step k+1, which every peer reaches only after finishing its reads of
// step k; so one or two barriers per step suffice and no reuse barrier is
// needed. Every rank advances the step counter identically.
//
// Threading: one caller at a time. Ranks may be processes or threads of one
// process (tests). Every wait has a deadline (spec.timeout_seconds) and a
// peer's death is noticed early; then the call returns Aborted, and the
// backend refuses further collectives.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/hal/collective_backend.h"
#include "devices/cpu/shm_copy_modes.h"
#include "devices/cpu/shm_segment.h"
#include "devices/cpu/shm_sync.h"

namespace hvda {
namespace cpu {

class ShmBackend : public CollectiveBackend {
 public:
  // Default of HOROVOD_SHM_SEGMENT_BYTES (a horovod_accel setting).
  static constexpr int64_t kDefaultSegmentBytes = 4 << 20;

  // Collective over spec's ranks, which must all be on this host: creates
  // this rank's segment (segment_bytes of data, >= 4 KiB per rank), publishes
  // its name in spec.store under spec.prefix, maps every peer's segment and
  // unlinks its own once all have mapped it. Blocks up to spec.timeout_seconds.
  static Status Create(const CommunicatorSpec& spec, int64_t segment_bytes,
                       std::unique_ptr<CollectiveBackend>* out);
  // Leaves the communicator (ShmLeave): peers still waiting for this rank
  // in a collective fail at once instead of at their deadline - e.g. after
  // this rank's collective failed in another backend (a lost host) and its
  // job generation ended. A rank that finished every collective is never
  // waited for, so a normal shutdown is unaffected.
  ~ShmBackend() override;
  // Leaves the communicator now (see the destructor); later collectives of
  // this rank fail at once.
  void Abort() override;

  const char* name() const override { return "shm"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool Supports(CollectiveKind kind, DataType dtype, ReduceOp op) const override;

  // Host-synchronous: each runs at once and returns when done; `stream` is
  // ignored (the CPU device's streams are always drained; may be null).
  Status Allreduce(void* buffer, int64_t count, DataType dtype, ReduceOp op,
                   Stream* stream) override;
  bool ReducesSpans() const override { return true; }
  Status AllreduceSpans(const std::vector<Span>& spans, DataType dtype, ReduceOp op,
                        double postscale, Stream* stream) override;
  Status Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes_per_rank,
                    Stream* stream) override;
  Status Broadcast(void* buffer, int64_t bytes, int root, Stream* stream) override;
  Status Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                   const std::vector<int64_t>& recv_bytes, Stream* stream) override;
  Status Reducescatter(const void* in, void* out, const std::vector<int64_t>& counts_per_rank,
                       DataType dtype, ReduceOp op, Stream* stream) override;
  Status Barrier(Stream* stream) override;
  // A peer's barrier counter is ahead of this rank's (it waits in a barrier
  // this rank has not reached); true after a failure, so that the caller
  // runs the collective and sees the error.
  bool PeerAhead() const override;

 private:
  ShmBackend(const CommunicatorSpec& spec, int64_t segment_bytes);

  // Arrives at the next barrier and waits for every peer (see NOTE [shm
  // barrier]). `op` names the collective in the error message.
  Status Sync(const char* op);
  // NOTE [shm small allreduce]; the concatenation of the spans fits a half.
  Status AllreduceSmall(const std::vector<Span>& spans, DataType dtype, ReduceOp op,
                        double postscale);
  // Refuses work after a failure; validates a per-rank vector's length.
  Status Check(const char* op, size_t per_rank_entries) const;
  // Starts a step: returns the half index (0/1) that this step uses.
  int NextHalf() { return static_cast<int>(step_++ & 1); }
  char* Half(int rank, int half) const { return data_[rank] + half * half_bytes_; }

  int rank_;
  int size_;
  std::string prefix_;
  double timeout_seconds_;
  int64_t half_bytes_;  // bytes of one half of the data area, multiple of 64
  std::vector<ShmSegment> segments_;      // [rank]; own segment included
  std::vector<ShmRankControl*> control_;  // [rank]; points into segments_
  std::vector<char*> data_;               // [rank]; data area of each segment
  uint32_t barriers_ = 0;                 // barriers this rank has reached
  ShmWaitState wait_state_;               // NOTE [Shared CPU]
  // NOTE [Adaptive copies], one per collective (their costs per byte differ).
  shm::CopyModes allreduce_copies_, reducescatter_copies_, allgather_copies_,
      broadcast_copies_, alltoall_copies_;
  uint64_t step_ = 0;                     // steps started (NOTE [shm steps])
  bool failed_ = false;
};

}  // namespace cpu
}  // namespace hvda
