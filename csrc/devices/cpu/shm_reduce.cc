// ShmBackend: the reducing collectives (allreduce, reducescatter).
//
// NOTE [shm allreduce]: the buffer (for AllreduceSpans, the concatenation
// of the spans) is processed in chunks of at most kAllreduceChunkBytes that
// fit one half (NOTE [shm steps]). A chunk is cut into `size` slices; rank q
// owns slice q, and slice q of every chunk travels in slot q of a half. The
// chunks are pipelined: in step j every rank
//   3. copies the peers' reduced slices of chunk j - 2 from their previous
//      half (slot q of rank q's half) into its buffer;
//   2. folds its own input slice r of chunk j - 1 (private memory) with slot
//      r of every peer's previous half, writing the result (times the
//      postscale, if any) into its buffer and into slot r of its own
//      current half;
//   1. publishes its input slices q != r of chunk j into slot q of its
//      current half;
// then passes one barrier; after the last step (j = chunks) it copies out
// the last chunk's reduced slices. A step writes only its own half and
// reads only the peers' previous one, so one barrier per step (chunks + 1
// in all, not two per chunk) keeps every read ahead of the rewrite two
// steps later. Per rank that is about two memory passes over the buffer,
// and nothing is read twice across the bus. Small buffers take one step
// instead (NOTE [shm small allreduce]).
#include <algorithm>
#include <vector>

#include "devices/cpu/shm_backend.h"
#include "devices/cpu/shm_copy_modes.h"
#include "devices/cpu/shm_ranges.h"
#include "kernels/reduce_kernels.h"

namespace hvda {
namespace cpu {
namespace {

using shm::Clamp;
using shm::CopyBytes;

// NOTE [shm small allreduce]: buffers whose every-rank copies together take
// at most this many bytes are reduced in one step.
constexpr int64_t kSmallAllreduceReadBytes = 64 << 10;

// Largest allreduce chunk (NOTE [shm allreduce]). Smaller chunks keep a
// step's slices in the CPUs' 2 MiB L2; more chunks cost more barriers.
// 512 KiB and 1 MiB measured close; 2 MiB (a whole half of the default
// segment) was much slower at 16 MiB (docs/design/shm_backend.md,
// "Measurements").
constexpr int64_t kAllreduceChunkBytes = 1 << 20;

// NOTE [Streamed outputs]: step 3 writes a rank's outputs long after step 1
// read the same lines of an in-place buffer (two steps, several chunks of
// other traffic, later), so for large buffers each line is fetched again
// before it is overwritten; streaming stores skip that fetch. They also
// push the result out of the cache, so only operations of at least a
// quarter of the last-level cache per rank may stream their outputs, and
// whether they do is measured like the publishing copy (NOTE [Adaptive
// copies] in shm_copy_modes.h): on the VM we measure on it pays in the
// normal phase and costs in the slow one.

// The fold of step 2 publishes its result block by block, while the block
// is still in L1 (a few percent faster at every size measured).
constexpr int64_t kFoldBlockBytes = 16 << 10;

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

// The concatenation of the spans of an AllreduceSpans call, addressed by
// element offset. Borrows `spans`, which must outlive it.
class SpanCursor {
 public:
  using Span = CollectiveBackend::Span;

  explicit SpanCursor(const std::vector<Span>& spans) : spans_(spans), start_(spans.size() + 1, 0) {
    for (size_t i = 0; i < spans.size(); ++i) start_[i + 1] = start_[i] + spans[i].count;
  }
  int64_t total() const { return start_.back(); }

  // Calls fn(span, first, n, at) for each piece of the elements [lo, lo + len)
  // of the concatenation, in order: n elements of `span` from its element
  // `first` on, which are elements [at, at + n) of the concatenation.
  // Precondition: 0 <= lo and lo + len <= total().
  template <typename Fn>
  void ForEach(int64_t lo, int64_t len, Fn&& fn) const {
    if (len <= 0) return;
    // The last span starting at or before lo (empty spans are skipped).
    size_t i = static_cast<size_t>(std::upper_bound(start_.begin(), start_.end(), lo) -
                                   start_.begin()) - 1;
    while (len > 0) {
      const int64_t first = lo - start_[i];
      const int64_t n = std::min(len, spans_[i].count - first);
      if (n > 0) fn(spans_[i], first, n, lo);
      lo += n;
      len -= n;
      ++i;
    }
  }

 private:
  const std::vector<Span>& spans_;
  std::vector<int64_t> start_;  // start_[i]: offset of spans_[i]; back(): total
};

}  // namespace

Status ShmBackend::Allreduce(void* buffer, int64_t count, DataType dtype, ReduceOp op, Stream* s) {
  return AllreduceSpans({Span{buffer, buffer, count}}, dtype, op, 1.0, s);
}

// NOTE [shm allreduce] over the concatenation of the spans, each read and
// written where it is: steps 1 and 3 read the inputs, steps 3 and 5 write
// the outputs, so in place, out of place and several tensors (a fused
// response) cost the same memory passes as one in-place buffer.
Status ShmBackend::AllreduceSpans(const std::vector<Span>& spans, DataType dtype, ReduceOp op,
                                  double postscale, Stream*) {
  HVDA_RETURN_IF_ERROR(Check("allreduce", size_));
  if (!kernels::IsReducible(dtype, op))
    return Status::InvalidArgument(std::string("shm backend: allreduce does not support ") +
                                   DataTypeName(dtype) + " with " + ReduceOpName(op) + ".");
  const int64_t esize = DataTypeSize(dtype);
  const SpanCursor all(spans);
  const int64_t count = all.total();
  if (count == 0) return Status::OK();
  auto in = [esize](const Span& s, int64_t first) {
    return static_cast<const char*>(s.in) + first * esize;
  };
  auto out = [esize](const Span& s, int64_t first) { return static_cast<char*>(s.out) + first * esize; };
  const bool scaled = postscale != 1.0;
  if (size_ == 1) {
    for (const Span& s : spans) {
      if (s.in != s.out) CopyBytes(s.out, s.in, s.count * esize);
      if (scaled) kernels::Scale(s.out, s.count, dtype, postscale);
    }
    return Status::OK();
  }
  if (count * esize * size_ <= kSmallAllreduceReadBytes && count * esize <= half_bytes_)
    return AllreduceSmall(spans, dtype, op, postscale);
  // Slice q of every chunk sits in slot q of a half, slot_elems long.
  const int64_t slot_elems = SlotElems(std::min(half_bytes_, kAllreduceChunkBytes), size_, esize);
  const int64_t chunk_max = slot_elems * size_;
  const int64_t chunks = (count + chunk_max - 1) / chunk_max;
  const int64_t fold_block = std::max<int64_t>(1, kFoldBlockBytes / esize);
  std::vector<const void*> srcs(size_);
  const shm::TimedCopies copies(&allreduce_copies_, count * esize, true);
  // Slice q of chunk c: returns its length and sets *lo to its first
  // element in the concatenation.
  auto slice_of = [&](int64_t c, int q, int64_t* lo) {
    const int64_t start = c * chunk_max, len = std::min(chunk_max, count - start);
    const int64_t slice = SliceElems(len, size_, esize);
    *lo = start + q * slice;
    return Clamp(len - q * slice, slice);
  };
  // Where element `at` of slice q (which starts at `lo`) sits in a half.
  auto slot = [&](int rank, int half, int q, int64_t lo, int64_t at) {
    return Half(rank, half) + (q * slot_elems + at - lo) * esize;
  };
  // Step 3 for chunk c, from the peers' half h.
  auto copy_out = [&](int64_t c, int h) {
    for (int q = 0; q < size_; ++q) {
      if (q == rank_) continue;
      int64_t lo;
      const int64_t len = slice_of(c, q, &lo);
      all.ForEach(lo, len, [&](const Span& s, int64_t first, int64_t n, int64_t at) {
        copies.Output(out(s, first), slot(q, h, q, lo, at), n * esize);
      });
    }
  };
  int h = 0;
  for (int64_t j = 0; j <= chunks; ++j) {
    const int prev = h;  // the half every rank wrote in step j - 1
    h = NextHalf();
    if (j >= 2) copy_out(j - 2, prev);
    if (j >= 1) {  // 2.
      int64_t lo;
      const int64_t len = slice_of(j - 1, rank_, &lo);
      all.ForEach(lo, len, [&](const Span& s, int64_t first, int64_t n, int64_t at) {
        for (int64_t b = 0; b < n; b += fold_block) {
          const int64_t m = std::min(fold_block, n - b);
          // Source order is rank order on every rank, so results are
          // identical everywhere (floating-point sums depend on it).
          for (int p = 0; p < size_; ++p)
            srcs[p] = p == rank_ ? in(s, first + b) : slot(p, prev, rank_, lo, at + b);
          kernels::ReduceN(out(s, first + b), srcs.data(), size_, m, dtype, op);
          if (scaled) kernels::Scale(out(s, first + b), m, dtype, postscale);
          copies.Publish(slot(rank_, h, rank_, lo, at + b), out(s, first + b), m * esize);
        }
      });
    }
    if (j < chunks)  // 1.
      for (int q = 0; q < size_; ++q) {
        if (q == rank_) continue;
        int64_t lo;
        const int64_t len = slice_of(j, q, &lo);
        all.ForEach(lo, len, [&](const Span& s, int64_t first, int64_t n, int64_t at) {
          copies.Publish(slot(rank_, h, q, lo, at), in(s, first), n * esize);
        });
      }
    HVDA_RETURN_IF_ERROR(Sync("allreduce"));
  }
  copy_out(chunks - 1, h);
  copies.FinishOutputs();
  return Status::OK();
}

// NOTE [shm small allreduce]: one step, one barrier. Every rank copies its
// whole input (the concatenation of the spans) into its half, passes the
// barrier, then folds every rank's half (its own input in place of its
// half) into its outputs, in rank order, so results are identical
// everywhere. Each rank reads size x count elements instead of count, and
// passes one barrier (a rendezvous with every peer; with more ranks than
// cores, a context switch) instead of two. It measured faster than the
// pipelined algorithm at 4-32 KiB per rank at np 2 and 3
// (docs/design/shm_backend.md, "Measurements"); larger buffers were not
// measured, so kSmallAllreduceReadBytes bounds what a rank reads.
Status ShmBackend::AllreduceSmall(const std::vector<Span>& spans, DataType dtype, ReduceOp op,
                                  double postscale) {
  const int64_t esize = DataTypeSize(dtype);
  const int h = NextHalf();
  int64_t total = 0;
  for (const Span& s : spans) total += s.count * esize;
  const shm::TimedCopies copies(&allreduce_copies_, total, false);
  int64_t at = 0;  // byte offset of the current span in the concatenation
  for (const Span& s : spans) {
    copies.Publish(Half(rank_, h) + at, s.in, s.count * esize);
    at += s.count * esize;
  }
  HVDA_RETURN_IF_ERROR(Sync("allreduce"));
  std::vector<const void*> srcs(size_);
  at = 0;
  for (const Span& s : spans) {
    for (int p = 0; p < size_; ++p) srcs[p] = p == rank_ ? s.in : Half(p, h) + at;
    kernels::ReduceN(s.out, srcs.data(), size_, s.count, dtype, op);
    if (postscale != 1.0) kernels::Scale(s.out, s.count, dtype, postscale);
    at += s.count * esize;
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
  if (!kernels::IsReducible(dtype, op))
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
  // What this rank publishes: its input for every other rank's segment.
  const int64_t published = first.back() + counts_per_rank.back() - counts_per_rank[rank_];
  const shm::TimedCopies copies(&reducescatter_copies_, published * esize, false);
  for (int64_t off = 0; off < most; off += region) {
    const int h = NextHalf();
    char* mine = Half(rank_, h);
    auto len = [&](int q) { return Clamp(counts_per_rank[q] - off, region); };
    for (int q = 0; q < size_; ++q)
      if (q != rank_)
        copies.Publish(mine + q * region * esize, src + (first[q] + off) * esize, len(q) * esize);
    HVDA_RETURN_IF_ERROR(Sync("reducescatter"));
    const int64_t own = len(rank_);
    if (own > 0) {
      for (int p = 0; p < size_; ++p)
        srcs[p] = p == rank_ ? src + (first[rank_] + off) * esize : Half(p, h) + rank_ * region * esize;
      kernels::ReduceN(dst + off * esize, srcs.data(), size_, own, dtype, op);
    }
  }
  return Status::OK();
}

}  // namespace cpu
}  // namespace hvda
