// ShmBackend: the reducing collectives (allreduce, reducescatter).
//
// NOTE [shm allreduce]: the buffer is processed in chunks of at most one
// half (NOTE [shm steps]). A chunk is cut into `size` slices; rank q owns
// slice q. In rank r's half, slot q (q != r) carries r's input for slice q
// and slot r carries r's reduced slice, so a half is exactly one chunk:
//   1. each rank copies its input slices q != r into its half, slot q;
//   2. barrier;
//   3. rank r folds its own input slice r (private memory) with slot r of
//      every peer's half, writing the result into its buffer and into slot r
//      of its own half (peers read only slots they own until step 4);
//   4. barrier;
//   5. rank r copies slot q of rank q's half into its buffer, for q != r.
// Per rank that is about two memory passes over the buffer, and nothing is
// read twice across the bus, which is what makes it several times faster
// than TCP loopback.
#include <algorithm>
#include <vector>

#include "devices/cpu/reduce_kernels.h"
#include "devices/cpu/shm_backend.h"
#include "devices/cpu/shm_ranges.h"

namespace hvda {
namespace cpu {
namespace {

using shm::Clamp;
using shm::CopyBytes;

// Elements of one 64-byte cache line (at least 1).
int64_t LineElems(int64_t esize) { return std::max<int64_t>(1, 64 / esize); }

// Elements per slice of a chunk of `count` elements over `size` ranks:
// rounded up to whole cache lines so that slices never share one.
int64_t SliceElems(int64_t count, int size, int64_t esize) {
  const int64_t line = LineElems(esize);
  const int64_t even = (count + size - 1) / size;
  return (even + line - 1) / line * line;
}

// Elements of one rank's slot when a half of `half_bytes` is split into
// `size` slots of whole cache lines (at least one line).
int64_t SlotElems(int64_t half_bytes, int size, int64_t esize) {
  const int64_t line = LineElems(esize);
  return std::max<int64_t>(line, (half_bytes / esize) / size / line * line);
}

}  // namespace

Status ShmBackend::Allreduce(void* buffer, int64_t count, DataType dtype, ReduceOp op, Stream* s) {
  return AllreduceOutOfPlace(buffer, buffer, count, dtype, op, s);
}

// NOTE [shm allreduce] with the input read where it is: steps 1 and 3 read
// `in`, steps 3 and 5 write `out`, so in == out (in place) and in != out cost
// the same.
Status ShmBackend::AllreduceOutOfPlace(const void* input, void* output, int64_t count,
                                       DataType dtype, ReduceOp op, Stream*) {
  HVDA_RETURN_IF_ERROR(Check("allreduce", size_));
  if (!IsReducible(dtype, op))
    return Status::InvalidArgument(std::string("shm backend: allreduce does not support ") +
                                   DataTypeName(dtype) + " with " + ReduceOpName(op) + ".");
  const int64_t esize = DataTypeSize(dtype);
  if (count == 0) return Status::OK();
  if (size_ == 1) {
    if (input != output) CopyBytes(output, input, count * esize);
    return Status::OK();
  }
  // Largest chunk whose slices (each rounded up to a cache line) fit a half.
  const int64_t chunk_max = SlotElems(half_bytes_, size_, esize) * size_;
  const char* in = static_cast<const char*>(input);
  char* out = static_cast<char*>(output);
  std::vector<const void*> srcs(size_);
  for (int64_t done = 0; done < count; done += chunk_max) {
    const int64_t chunk = std::min(chunk_max, count - done);
    const int64_t slice = SliceElems(chunk, size_, esize);
    auto slice_len = [&](int q) { return Clamp(chunk - q * slice, slice); };
    const char* src = in + done * esize;
    char* dst = out + done * esize;
    const int h = NextHalf();
    char* mine = Half(rank_, h);
    for (int q = 0; q < size_; ++q)
      if (q != rank_) CopyBytes(mine + q * slice * esize, src + q * slice * esize, slice_len(q) * esize);
    HVDA_RETURN_IF_ERROR(Sync("allreduce"));
    const int64_t own = slice_len(rank_);
    if (own > 0) {
      const int64_t off = rank_ * slice * esize;
      // Source order is rank order on every rank, so results are identical
      // everywhere (floating-point sums depend on the order).
      for (int p = 0; p < size_; ++p) srcs[p] = p == rank_ ? src + off : Half(p, h) + off;
      ReduceN(dst + off, srcs.data(), size_, own, dtype, op);
      CopyBytes(mine + off, dst + off, own * esize);
    }
    HVDA_RETURN_IF_ERROR(Sync("allreduce"));
    for (int q = 0; q < size_; ++q)
      if (q != rank_)
        CopyBytes(dst + q * slice * esize, Half(q, h) + q * slice * esize, slice_len(q) * esize);
  }
  return Status::OK();
}

// Each step moves up to `region` elements of every destination's segment:
// rank r writes its input for segment q into slot q of its half, passes one
// barrier, then folds slot r of every peer's half with its own input.
Status ShmBackend::Reducescatter(const void* in, void* out,
                                 const std::vector<int64_t>& counts_per_rank, DataType dtype,
                                 ReduceOp op, Stream*) {
  HVDA_RETURN_IF_ERROR(Check("reducescatter", counts_per_rank.size()));
  if (!IsReducible(dtype, op))
    return Status::InvalidArgument(std::string("shm backend: reducescatter does not support ") +
                                   DataTypeName(dtype) + " with " + ReduceOpName(op) + ".");
  const int64_t esize = DataTypeSize(dtype);
  const std::vector<int64_t> first = shm::Offsets(counts_per_rank);
  const char* src = static_cast<const char*>(in);
  char* dst = static_cast<char*>(out);
  if (size_ == 1) {
    CopyBytes(dst, src, counts_per_rank[0] * esize);
    return Status::OK();
  }
  const int64_t region = SlotElems(half_bytes_, size_, esize);
  const int64_t most = *std::max_element(counts_per_rank.begin(), counts_per_rank.end());
  std::vector<const void*> srcs(size_);
  for (int64_t off = 0; off < most; off += region) {
    const int h = NextHalf();
    char* mine = Half(rank_, h);
    auto len = [&](int q) { return Clamp(counts_per_rank[q] - off, region); };
    for (int q = 0; q < size_; ++q)
      if (q != rank_)
        CopyBytes(mine + q * region * esize, src + (first[q] + off) * esize, len(q) * esize);
    HVDA_RETURN_IF_ERROR(Sync("reducescatter"));
    const int64_t own = len(rank_);
    if (own > 0) {
      for (int p = 0; p < size_; ++p)
        srcs[p] = p == rank_ ? src + (first[rank_] + off) * esize : Half(p, h) + rank_ * region * esize;
      ReduceN(dst + off * esize, srcs.data(), size_, own, dtype, op);
    }
  }
  return Status::OK();
}

}  // namespace cpu
}  // namespace hvda
