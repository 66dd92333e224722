#include "devices/cpu/host_device.h"

#include <cstdlib>
#include <cstring>

#include "kernels/reduce_kernels.h"

namespace hvda {
namespace cpu {

Status HostMemory::Allocate(size_t bytes, void** ptr) {
  // aligned_alloc wants a size that is a multiple of the alignment.
  const size_t rounded = (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  void* p = std::aligned_alloc(kHostAlignment, rounded == 0 ? kHostAlignment : rounded);
  if (p == nullptr)
    return Status::Aborted("cpu device: could not allocate " + std::to_string(bytes) +
                           " bytes of host memory; reduce HOROVOD_FUSION_THRESHOLD or the "
                           "tensor sizes, or free memory on this host.");
  *ptr = p;
  return Status::OK();
}

void HostMemory::Free(void* ptr) { std::free(ptr); }

Status HostMemory::CopyAsync(void* dst, const void* src, size_t bytes, Stream*) {
  if (bytes > 0 && dst != src) std::memcpy(dst, src, bytes);
  return Status::OK();
}

Status HostMemory::MemsetAsync(void* dst, int value, size_t bytes, Stream*) {
  if (bytes > 0) std::memset(dst, value, bytes);
  return Status::OK();
}

Status HostExecution::CreateStream(std::unique_ptr<Stream>* stream) {
  stream->reset(new Stream());
  return Status::OK();
}

Status HostExecution::WrapStream(void*, std::unique_ptr<Stream>* stream) {
  return CreateStream(stream);
}

Status HostExecution::CreateEvent(std::unique_ptr<Event>* event) {
  event->reset(new Event());
  return Status::OK();
}

Status HostExecution::Scale(void* buf, int64_t count, DataType dtype, double factor, Stream*) {
  kernels::Scale(buf, count, dtype, factor);
  return Status::OK();
}

Status HostExecution::ReduceInto(void* dst, const void* src, int64_t count, DataType dtype,
                                 ReduceOp op, Stream*) {
  if (!kernels::IsReducible(dtype, op))
    return Status::InvalidArgument(std::string("cpu device: cannot reduce ") +
                                   DataTypeName(dtype) + " with " + ReduceOpName(op) +
                                   "; supported ops are Sum, Min, Max and Product over every "
                                   "dtype except bool.");
  kernels::Reduce2(dst, dst, src, count, dtype, op);
  return Status::OK();
}

Status HostExecution::BatchedCopy(const std::vector<CopyDesc>& copies, Stream*) {
  for (const CopyDesc& c : copies)
    if (c.bytes > 0 && c.dst != c.src) std::memcpy(c.dst, c.src, c.bytes);
  return Status::OK();
}

}  // namespace cpu
}  // namespace hvda
