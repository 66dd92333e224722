// ShmBackend: setup, barrier and the data-movement collectives. The
// reducing collectives are in shm_reduce.cc.
#include "devices/cpu/shm_backend.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <random>

#include "common/store/store.h"
#include "devices/cpu/shm_copy_modes.h"
#include "devices/cpu/shm_ranges.h"
#include "devices/cpu/shm_stream_copy.h"
#include "kernels/reduce_kernels.h"

namespace hvda {
namespace cpu {
namespace {

using shm::Clamp;
using shm::CopyBytes;
using shm::Offsets;

// The control block gets a page of its own; the data area starts page-aligned.
constexpr size_t kControlBytes = 4096;
static_assert(sizeof(ShmRankControl) <= kControlBytes, "control block must fit its page");

// "/hvda_<prefix>_r<rank>_p<pid>_<nonce>": unique per job (prefix, pid) and
// per backend instance (nonce), so parallel jobs and repeated in-process
// tests never collide.
std::string SegmentName(const CommunicatorSpec& spec) {
  std::string clean;
  for (char c : spec.prefix.substr(0, 96))
    clean += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  std::random_device rd;
  char nonce[16];
  std::snprintf(nonce, sizeof(nonce), "%08x", static_cast<unsigned>(rd()));
  return "/hvda_" + clean + "_r" + std::to_string(spec.rank) + "_p" + std::to_string(getpid()) +
         "_" + nonce;
}

}  // namespace

ShmBackend::ShmBackend(const CommunicatorSpec& spec, int64_t segment_bytes)
    : rank_(spec.rank),
      size_(spec.size),
      prefix_(spec.prefix),
      timeout_seconds_(spec.timeout_seconds),
      half_bytes_(std::max<int64_t>(segment_bytes, 4096 * spec.size) / 2 / 64 * 64),
      segments_(spec.size),
      control_(spec.size, nullptr),
      data_(spec.size, nullptr),
      // NOTE [Streamed outputs] in shm_reduce.cc: only allreduces copy
      // outputs out of the segments with a chosen copy.
      allreduce_copies_(shm::LastLevelCacheBytes() / 4) {}

ShmBackend::~ShmBackend() {
  if (!control_.empty() && control_[rank_] != nullptr) ShmLeave(control_[rank_]);
}

void ShmBackend::Abort() {
  failed_ = true;
  if (control_[rank_] != nullptr) ShmLeave(control_[rank_]);
}

Status ShmBackend::Create(const CommunicatorSpec& spec, int64_t segment_bytes,
                          std::unique_ptr<CollectiveBackend>* out) {
  if (spec.size < 1 || spec.rank < 0 || spec.rank >= spec.size || spec.store == nullptr)
    return Status::InvalidArgument("shm backend: invalid communicator spec (rank " +
                                   std::to_string(spec.rank) + " of " +
                                   std::to_string(spec.size) + ").");
  std::unique_ptr<ShmBackend> b(new ShmBackend(spec, segment_bytes));
  const size_t total = kControlBytes + 2 * static_cast<size_t>(b->half_bytes_);
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(spec.timeout_seconds * 1000));

  const std::string name = SegmentName(spec);
  HVDA_RETURN_IF_ERROR(ShmSegment::Create(name, total, &b->segments_[spec.rank]));
  reinterpret_cast<ShmRankControl*>(b->segments_[spec.rank].data())->pid.store(getpid());
  HVDA_RETURN_IF_ERROR(spec.store->Set(spec.prefix + "seg/" + std::to_string(spec.rank), name));
  for (int p = 0; p < spec.size; ++p) {
    if (p == spec.rank) continue;
    std::string peer;
    Status st = spec.store->Get(spec.prefix + "seg/" + std::to_string(p), &peer, timeout);
    if (!st.ok())
      return Status::Aborted("shm backend: rank " + std::to_string(p) +
                             " did not publish its shared-memory segment within " +
                             std::to_string(static_cast<int>(spec.timeout_seconds)) +
                             "s; a peer process probably died during init (" + st.reason() + ").");
    HVDA_RETURN_IF_ERROR(ShmSegment::Open(peer, total, &b->segments_[p]));
  }
  for (int p = 0; p < spec.size; ++p) {
    b->control_[p] = reinterpret_cast<ShmRankControl*>(b->segments_[p].data());
    b->data_[p] = b->segments_[p].data() + kControlBytes;
  }
  b->wait_state_.self = b->control_[spec.rank];
  // After this barrier every peer has mapped our segment: drop its name.
  HVDA_RETURN_IF_ERROR(b->Sync("setup"));
  b->segments_[spec.rank].Unlink();
  *out = std::move(b);
  return Status::OK();
}

bool ShmBackend::Supports(CollectiveKind kind, DataType dtype, ReduceOp op) const {
  if (kind == CollectiveKind::kAllreduce || kind == CollectiveKind::kReducescatter)
    return kernels::IsReducible(dtype, op);
  return IsValidDataType(static_cast<int32_t>(dtype));
}

Status ShmBackend::Check(const char* op, size_t per_rank_entries) const {
  if (failed_)
    return Status::Aborted(std::string("shm backend: ") + op + " on rank " +
                           std::to_string(rank_) +
                           " refused: an earlier collective failed, so this communicator is "
                           "unusable; shut down and restart the job.");
  if (per_rank_entries != static_cast<size_t>(size_))
    return Status::InvalidArgument(std::string("shm backend: ") + op + " got " +
                                   std::to_string(per_rank_entries) +
                                   " per-rank sizes for a communicator of " +
                                   std::to_string(size_) + " ranks.");
  return Status::OK();
}

Status ShmBackend::Sync(const char* op) {
  ++barriers_;
  // Peers read what this rank published before the barrier, streaming
  // stores included (NOTE [Streaming publish]).
  shm::StoreFence();
  ShmArrive(control_[rank_], barriers_);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds_ * 1000));
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    ShmPeerGone gone = ShmPeerGone::kNo;
    if (ShmWaitArrived(control_[p], barriers_, deadline, &wait_state_, &gone)) continue;
    failed_ = true;
    // This rank's peers must not wait for it either (they may be waiting
    // for this very barrier's successors).
    ShmLeave(control_[rank_]);
    if (gone == ShmPeerGone::kLeft)
      return Status::Aborted("shm backend: rank " + std::to_string(p) + " left " + op +
                             " (seen by rank " + std::to_string(rank_) + "): its communicator "
                             "failed or was shut down - a collective of it failed elsewhere (a "
                             "lost peer on another host?) or it left the job. Check that rank's "
                             "log for the cause.");
    if (gone == ShmPeerGone::kDied)
      return Status::Aborted("shm backend: rank " + std::to_string(p) + " (pid " +
                             std::to_string(control_[p]->pid.load()) + ") exited during " + op +
                             " (seen by rank " + std::to_string(rank_) +
                             "); check that rank's log for the cause.");
    return Status::Aborted("shm backend: rank " + std::to_string(p) + " did not arrive at " + op +
                           " within " + std::to_string(static_cast<int>(timeout_seconds_)) +
                           "s (seen by rank " + std::to_string(rank_) +
                           "); a peer process probably died or stalled. Check the other "
                           "ranks' logs, or raise HOROVOD_GLOO_TIMEOUT_SECONDS.");
  }
  return Status::OK();
}

bool ShmBackend::PeerAhead() const {
  if (failed_) return true;
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    // Counters are compared modulo 2^32 (shm_sync.h).
    const uint32_t theirs = control_[p]->arrived.load(std::memory_order_acquire);
    if (static_cast<int32_t>(theirs - barriers_) > 0) return true;
  }
  return false;
}

Status ShmBackend::Barrier(Stream*) {
  HVDA_RETURN_IF_ERROR(Check("barrier", size_));
  return size_ == 1 ? Status::OK() : Sync("barrier");
}

Status ShmBackend::Broadcast(void* buffer, int64_t bytes, int root, Stream*) {
  HVDA_RETURN_IF_ERROR(Check("broadcast", size_));
  if (root < 0 || root >= size_)
    return Status::InvalidArgument("shm backend: broadcast root " + std::to_string(root) +
                                   " is not a rank of this communicator of " +
                                   std::to_string(size_) + ".");
  char* buf = static_cast<char*>(buffer);
  const shm::TimedCopies copies(&broadcast_copies_, bytes, false);
  for (int64_t off = 0; off < bytes && size_ > 1; off += half_bytes_) {
    const int64_t len = std::min(half_bytes_, bytes - off);
    const int h = NextHalf();
    if (rank_ == root) copies.Publish(Half(root, h), buf + off, len);
    HVDA_RETURN_IF_ERROR(Sync("broadcast"));
    if (rank_ != root) CopyBytes(buf + off, Half(root, h), len);
  }
  return Status::OK();
}

Status ShmBackend::Allgatherv(const void* in, void* out,
                              const std::vector<int64_t>& bytes_per_rank, Stream*) {
  HVDA_RETURN_IF_ERROR(Check("allgatherv", bytes_per_rank.size()));
  const std::vector<int64_t> offset = Offsets(bytes_per_rank);
  const char* src = static_cast<const char*>(in);
  char* dst = static_cast<char*>(out);
  if (bytes_per_rank[rank_] > 0) CopyBytes(dst + offset[rank_], src, bytes_per_rank[rank_]);
  if (size_ == 1) return Status::OK();
  const int64_t most = *std::max_element(bytes_per_rank.begin(), bytes_per_rank.end());
  const shm::TimedCopies copies(&allgather_copies_, bytes_per_rank[rank_], false);
  for (int64_t off = 0; off < most; off += half_bytes_) {
    const int h = NextHalf();
    copies.Publish(Half(rank_, h), src + off, Clamp(bytes_per_rank[rank_] - off, half_bytes_));
    HVDA_RETURN_IF_ERROR(Sync("allgatherv"));
    for (int p = 0; p < size_; ++p)
      if (p != rank_)
        CopyBytes(dst + offset[p] + off, Half(p, h), Clamp(bytes_per_rank[p] - off, half_bytes_));
  }
  return Status::OK();
}

Status ShmBackend::Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                             const std::vector<int64_t>& recv_bytes, Stream*) {
  HVDA_RETURN_IF_ERROR(Check("alltoallv", send_bytes.size()));
  HVDA_RETURN_IF_ERROR(Check("alltoallv", recv_bytes.size()));
  const std::vector<int64_t> soff = Offsets(send_bytes), roff = Offsets(recv_bytes);
  const char* src = static_cast<const char*>(in);
  char* dst = static_cast<char*>(out);
  if (send_bytes[rank_] > 0)
    CopyBytes(dst + roff[rank_], src + soff[rank_], std::min(send_bytes[rank_], recv_bytes[rank_]));
  if (size_ == 1) return Status::OK();
  // A half is [64-byte header | one region per destination]. Only the send
  // row and receive column of the byte matrix are known here, so the first
  // step's header carries each rank's largest send and all ranks derive the
  // same step count from the maximum.
  constexpr int64_t kHeader = 64;
  const int64_t region = (half_bytes_ - kHeader) / size_ / 64 * 64;
  int64_t my_most = 0;
  for (int d = 0; d < size_; ++d)
    if (d != rank_) my_most = std::max(my_most, send_bytes[d]);
  int64_t steps = 1;
  // What this rank publishes: everything it sends to other ranks.
  const shm::TimedCopies copies(&alltoall_copies_,
                                soff.back() + send_bytes.back() - send_bytes[rank_], false);
  for (int64_t j = 0; j < steps; ++j) {
    const int h = NextHalf();
    const int64_t off = j * region;
    char* mine = Half(rank_, h);
    if (j == 0) CopyBytes(mine, &my_most, sizeof(my_most));
    for (int d = 0; d < size_; ++d)
      if (d != rank_)
        copies.Publish(mine + kHeader + d * region, src + soff[d] + off,
                Clamp(send_bytes[d] - off, region));
    HVDA_RETURN_IF_ERROR(Sync("alltoallv"));
    if (j == 0) {
      int64_t most = 0;
      for (int p = 0; p < size_; ++p) {
        int64_t v;
        CopyBytes(&v, Half(p, h), sizeof(v));
        most = std::max(most, v);
      }
      steps = std::max<int64_t>(1, (most + region - 1) / region);
    }
    for (int p = 0; p < size_; ++p)
      if (p != rank_)
        CopyBytes(dst + roff[p] + off, Half(p, h) + kHeader + rank_ * region,
                    Clamp(recv_bytes[p] - off, region));
  }
  return Status::OK();
}

}  // namespace cpu
}  // namespace hvda
