#include "devices/cpu/gloo_backend.h"

#include <chrono>
#include <cstring>
#include <exception>
#include <numeric>

#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>

#include "common/transport/gloo_context.h"
#include "kernels/reduce_kernels.h"

namespace hvda {
namespace cpu {
namespace {

// Gloo needs a valid pointer even for zero-byte buffers; nothing is ever
// read from or written to it.
char* NonNull(const void* p, char* placeholder) {
  return p != nullptr ? static_cast<char*>(const_cast<void*>(p)) : placeholder;
}

// Gloo sees only an element size; a same-sized unsigned type stands in for
// every dtype, and `reduce` does the typed work.
template <typename T>
void RunAllreduce(const std::shared_ptr<gloo::Context>& ctx, void* buffer, int64_t count,
                  gloo::AllreduceOptions::Func reduce, uint32_t tag,
                  std::chrono::milliseconds timeout) {
  gloo::AllreduceOptions opts(ctx);
  opts.setOutput<T>(static_cast<T*>(buffer), static_cast<size_t>(count));
  opts.setReduceFunction(std::move(reduce));
  opts.setTag(tag);
  opts.setTimeout(timeout);
  gloo::allreduce(opts);
}

}  // namespace

Status GlooBackend::Create(const CommunicatorSpec& spec, const std::string& iface,
                           std::unique_ptr<CollectiveBackend>* out) {
  std::shared_ptr<gloo::Context> ctx;
  HVDA_RETURN_IF_ERROR(CreateGlooContext(spec, iface, &ctx));
  out->reset(new GlooBackend(std::move(ctx), spec));
  return Status::OK();
}

GlooBackend::GlooBackend(std::shared_ptr<gloo::Context> ctx, const CommunicatorSpec& spec)
    : ctx_(std::move(ctx)),
      rank_(spec.rank),
      size_(spec.size),
      prefix_(spec.prefix),
      timeout_seconds_(spec.timeout_seconds) {}

bool GlooBackend::Supports(CollectiveKind kind, DataType dtype, ReduceOp op) const {
  if (kind == CollectiveKind::kAllreduce || kind == CollectiveKind::kReducescatter)
    return kernels::IsReducible(dtype, op);
  return IsValidDataType(static_cast<int32_t>(dtype));
}

template <typename Fn>
Status GlooBackend::Guard(const char* op, Fn&& fn) {
  const std::string where = std::string("gloo backend: ") + op + " on rank " +
                            std::to_string(rank_) + " of " + std::to_string(size_) +
                            " (communicator '" + prefix_ + "')";
  if (failed_)
    return Status::Aborted(where + " refused: an earlier collective failed, so this "
                           "communicator is unusable; shut down and restart the job.");
  try {
    fn();
    return Status::OK();
  } catch (const std::exception& e) {
    failed_ = true;
    return Status::Aborted(where + " failed: " + e.what() +
                           ". A peer process probably died or stalled for more than " +
                           std::to_string(static_cast<int>(timeout_seconds_)) +
                           "s; check the other ranks' logs, or raise "
                           "HOROVOD_GLOO_TIMEOUT_SECONDS for slow steps.");
  }
}

Status GlooBackend::CheckVector(const char* op, size_t n) const {
  if (n == static_cast<size_t>(size_)) return Status::OK();
  return Status::InvalidArgument(std::string("gloo backend: ") + op + " got " +
                                 std::to_string(n) + " per-rank sizes for a communicator of " +
                                 std::to_string(size_) + " ranks.");
}

Status GlooBackend::Allreduce(void* buffer, int64_t count, DataType dtype, ReduceOp op, Stream*) {
  if (!kernels::IsReducible(dtype, op))
    return Status::InvalidArgument(std::string("gloo backend: cannot allreduce ") +
                                   DataTypeName(dtype) + " with " + ReduceOpName(op) + ".");
  // Every rank has the same count, so skipping is collective-consistent.
  if (count == 0 || size_ == 1) return Status::OK();
  const uint32_t tag = NextTag();
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds_ * 1000));
  gloo::AllreduceOptions::Func reduce = [dtype, op](void* o, const void* a, const void* b,
                                                    size_t n) {
    kernels::Reduce2(o, a, b, static_cast<int64_t>(n), dtype, op);
  };
  return Guard("allreduce", [&] {
    switch (DataTypeSize(dtype)) {
      case 1: return RunAllreduce<uint8_t>(ctx_, buffer, count, reduce, tag, timeout);
      case 2: return RunAllreduce<uint16_t>(ctx_, buffer, count, reduce, tag, timeout);
      case 4: return RunAllreduce<uint32_t>(ctx_, buffer, count, reduce, tag, timeout);
      default: return RunAllreduce<uint64_t>(ctx_, buffer, count, reduce, tag, timeout);
    }
  });
}

Status GlooBackend::Allgatherv(const void* in, void* out,
                               const std::vector<int64_t>& bytes_per_rank, Stream*) {
  HVDA_RETURN_IF_ERROR(CheckVector("allgatherv", bytes_per_rank.size()));
  const int64_t total = std::accumulate(bytes_per_rank.begin(), bytes_per_rank.end(), int64_t{0});
  if (total == 0) return Status::OK();  // same on every rank
  if (size_ == 1) {
    std::memcpy(out, in, bytes_per_rank[0]);
    return Status::OK();
  }
  const uint32_t tag = NextTag();
  char placeholder[1];
  return Guard("allgatherv", [&] {
    gloo::AllgathervOptions opts(ctx_);
    opts.setInput<char>(NonNull(in, placeholder), static_cast<size_t>(bytes_per_rank[rank_]));
    opts.setOutput<char>(static_cast<char*>(out),
                         std::vector<size_t>(bytes_per_rank.begin(), bytes_per_rank.end()));
    opts.setTag(tag);
    opts.setTimeout(std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds_ * 1000)));
    gloo::allgatherv(opts);
  });
}

Status GlooBackend::Broadcast(void* buffer, int64_t bytes, int root, Stream*) {
  if (root < 0 || root >= size_)
    return Status::InvalidArgument("gloo backend: broadcast root " + std::to_string(root) +
                                   " is not a rank of this communicator of " +
                                   std::to_string(size_) + ".");
  if (bytes == 0 || size_ == 1) return Status::OK();
  const uint32_t tag = NextTag();
  return Guard("broadcast", [&] {
    gloo::BroadcastOptions opts(ctx_);
    opts.setOutput<char>(static_cast<char*>(buffer), static_cast<size_t>(bytes));
    opts.setRoot(root);
    opts.setTag(tag);
    opts.setTimeout(std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds_ * 1000)));
    gloo::broadcast(opts);
  });
}

Status GlooBackend::Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                              const std::vector<int64_t>& recv_bytes, Stream*) {
  HVDA_RETURN_IF_ERROR(CheckVector("alltoallv", send_bytes.size()));
  HVDA_RETURN_IF_ERROR(CheckVector("alltoallv", recv_bytes.size()));
  if (size_ == 1) {
    if (send_bytes[0] > 0) std::memcpy(out, in, send_bytes[0]);
    return Status::OK();
  }
  const uint32_t tag = NextTag();
  char in_placeholder[1], out_placeholder[1];
  return Guard("alltoallv", [&] {
    gloo::AlltoallvOptions opts(ctx_);
    opts.setInput<char>(NonNull(in, in_placeholder), send_bytes);
    opts.setOutput<char>(NonNull(out, out_placeholder), recv_bytes);
    opts.setTag(tag);
    opts.setTimeout(std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds_ * 1000)));
    gloo::alltoallv(opts);
  });
}

Status GlooBackend::Reducescatter(const void* in, void* out,
                                  const std::vector<int64_t>& counts_per_rank, DataType dtype,
                                  ReduceOp op, Stream*) {
  HVDA_RETURN_IF_ERROR(CheckVector("reducescatter", counts_per_rank.size()));
  if (!kernels::IsReducible(dtype, op))
    return Status::InvalidArgument(std::string("gloo backend: cannot reducescatter ") +
                                   DataTypeName(dtype) + " with " + ReduceOpName(op) + ".");
  const int64_t esize = static_cast<int64_t>(DataTypeSize(dtype));
  const int64_t mine = counts_per_rank[rank_];
  if (size_ == 1) {
    if (mine > 0 && in != out) std::memmove(out, in, mine * esize);
    return Status::OK();
  }
  // Segment r of every rank goes to rank r; then each rank folds the n
  // segments it received, in rank order (so the result does not depend on
  // which rank computes it).
  std::vector<int64_t> send(size_), recv(size_, mine * esize);
  for (int r = 0; r < size_; ++r) send[r] = counts_per_rank[r] * esize;
  if (scratch_.size() < static_cast<size_t>(mine * esize * size_))
    scratch_.resize(mine * esize * size_);
  HVDA_RETURN_IF_ERROR(Alltoallv(in, send, scratch_.data(), recv, nullptr));
  if (mine == 0) return Status::OK();
  std::vector<const void*> srcs(size_);
  for (int r = 0; r < size_; ++r) srcs[r] = scratch_.data() + r * mine * esize;
  kernels::ReduceN(out, srcs.data(), size_, mine, dtype, op);
  return Status::OK();
}

Status GlooBackend::Barrier(Stream*) {
  if (size_ == 1) return Status::OK();
  const uint32_t tag = NextTag();
  return Guard("barrier", [&] {
    gloo::BarrierOptions opts(ctx_);
    opts.setTag(tag);
    opts.setTimeout(std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds_ * 1000)));
    gloo::barrier(opts);
  });
}

}  // namespace cpu
}  // namespace hvda
