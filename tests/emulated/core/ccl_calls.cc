// The collective calls (emu_core.h): each validates its arguments - the
// communicator, the stream, types, ops, ranks, and that every buffer is
// device memory of this process for its whole byte range - then submits a
// plan part (collectives.h). Zero-sized calls do nothing.
#include <algorithm>
#include <utility>
#include <vector>

#include "ccl_call.h"
#include "runtime.h"

namespace hvda_emu {
namespace {

// ------------------------------------------------------------- validation

// The communicator and stream of a call.
int Target(CclApi api, CommHandle comm, StreamHandle stream, std::shared_ptr<Comm>* c,
           std::shared_ptr<Stream>* s) {
  *c = FindComm(api, comm);
  *s = ResolveStream(stream);
  return *c != nullptr && *s != nullptr ? kCclSuccess : kCclInvalidArgument;
}

// bytes = count * elem_size, false on overflow.
bool Bytes(size_t count, size_t elem_size, size_t* bytes) {
  return !__builtin_mul_overflow(count, elem_size, bytes);
}

// Validates `bytes` of device memory at p (nothing to check when 0) and
// returns the shadow address, keeping the memory mapped through call->keep.
bool DeviceBuffer(const void* p, size_t bytes, Call* call, char** shadow) {
  *shadow = nullptr;
  if (bytes == 0) return true;
  DeviceSpan span;
  if (!ProcessDeviceMemory().Resolve(p, bytes, &span)) return false;
  *shadow = span.shadow;
  call->keep.push_back(std::move(span));
  return true;
}

}  // namespace

// ------------------------------------------------------------ collectives

int CclAllReduce(CclApi api, const void* s, void* r, size_t count, int dtype, int op,
                 CommHandle comm, StreamHandle stream) {
  Call call;
  std::shared_ptr<Stream> st;
  Reduction red;
  size_t bytes;
  if (Target(api, comm, stream, &call.comm, &st) != kCclSuccess ||
      !call.comm->ResolveOp(op, dtype, &red) || !Bytes(count, DTypeSize(dtype), &bytes)) {
    return kCclInvalidArgument;
  }
  if (count == 0) return kCclSuccess;
  char *sd, *rd;
  if (!DeviceBuffer(s, bytes, &call, &sd) || !DeviceBuffer(r, bytes, &call, &rd)) {
    return kCclInvalidArgument;
  }
  call.part = AllReducePart(sd, rd, count, red);
  return Submit(api, std::move(st), std::move(call));
}

int CclBroadcast(CclApi api, const void* s, void* r, size_t count, int dtype, int root,
                 CommHandle comm, StreamHandle stream) {
  Call call;
  std::shared_ptr<Stream> st;
  size_t bytes;
  if (Target(api, comm, stream, &call.comm, &st) != kCclSuccess || !ValidDType(dtype) ||
      root < 0 || root >= call.comm->nranks() || !Bytes(count, DTypeSize(dtype), &bytes)) {
    return kCclInvalidArgument;
  }
  if (count == 0) return kCclSuccess;
  char *sd, *rd;
  const bool is_root = call.comm->rank() == root;  // s is only read on the root
  if ((is_root && !DeviceBuffer(s, bytes, &call, &sd)) || !DeviceBuffer(r, bytes, &call, &rd)) {
    return kCclInvalidArgument;
  }
  call.part = BroadcastPart(is_root ? sd : nullptr, rd, bytes, root);
  return Submit(api, std::move(st), std::move(call));
}

int CclAllGather(CclApi api, const void* s, void* r, size_t sendcount, int dtype, CommHandle comm,
                 StreamHandle stream) {
  Call call;
  std::shared_ptr<Stream> st;
  size_t bytes, total;
  if (Target(api, comm, stream, &call.comm, &st) != kCclSuccess || !ValidDType(dtype) ||
      !Bytes(sendcount, DTypeSize(dtype), &bytes) ||
      !Bytes(bytes, static_cast<size_t>(call.comm->nranks()), &total)) {
    return kCclInvalidArgument;
  }
  if (sendcount == 0) return kCclSuccess;
  char *sd, *rd;
  if (!DeviceBuffer(s, bytes, &call, &sd) || !DeviceBuffer(r, total, &call, &rd)) {
    return kCclInvalidArgument;
  }
  call.part = AllGatherPart(sd, rd, bytes);
  return Submit(api, std::move(st), std::move(call));
}

int CclReduceScatter(CclApi api, const void* s, void* r, size_t recvcount, int dtype, int op,
                     CommHandle comm, StreamHandle stream) {
  Call call;
  std::shared_ptr<Stream> st;
  Reduction red;
  size_t bytes, total;
  if (Target(api, comm, stream, &call.comm, &st) != kCclSuccess ||
      !call.comm->ResolveOp(op, dtype, &red) || !Bytes(recvcount, DTypeSize(dtype), &bytes) ||
      !Bytes(bytes, static_cast<size_t>(call.comm->nranks()), &total)) {
    return kCclInvalidArgument;
  }
  if (recvcount == 0) return kCclSuccess;
  char *sd, *rd;
  if (!DeviceBuffer(s, total, &call, &sd) || !DeviceBuffer(r, bytes, &call, &rd)) {
    return kCclInvalidArgument;
  }
  call.part = ReduceScatterPart(sd, rd, recvcount, red);
  return Submit(api, std::move(st), std::move(call));
}

int CclSend(CclApi api, const void* s, size_t count, int dtype, int peer, CommHandle comm,
            StreamHandle stream) {
  Call call;
  std::shared_ptr<Stream> st;
  size_t bytes;
  char* sd;
  if (Target(api, comm, stream, &call.comm, &st) != kCclSuccess || !ValidDType(dtype) ||
      peer < 0 || peer >= call.comm->nranks() || !Bytes(count, DTypeSize(dtype), &bytes) ||
      !DeviceBuffer(s, bytes, &call, &sd)) {
    return kCclInvalidArgument;
  }
  if (count == 0) return kCclSuccess;
  call.part = SendPart(sd, bytes, peer);
  return Submit(api, std::move(st), std::move(call));
}

int CclRecv(CclApi api, void* r, size_t count, int dtype, int peer, CommHandle comm,
            StreamHandle stream) {
  Call call;
  std::shared_ptr<Stream> st;
  size_t bytes;
  char* rd;
  if (Target(api, comm, stream, &call.comm, &st) != kCclSuccess || !ValidDType(dtype) ||
      peer < 0 || peer >= call.comm->nranks() || !Bytes(count, DTypeSize(dtype), &bytes) ||
      !DeviceBuffer(r, bytes, &call, &rd)) {
    return kCclInvalidArgument;
  }
  if (count == 0) return kCclSuccess;
  call.part = RecvPart(rd, bytes, peer);
  return Submit(api, std::move(st), std::move(call));
}

int CclAllGatherV(CclApi api, const void* s, size_t sendcount, void* r, const size_t* recvcounts,
                  const size_t* displs, int dtype, CommHandle comm, StreamHandle stream) {
  Call call;
  std::shared_ptr<Stream> st;
  if (Target(api, comm, stream, &call.comm, &st) != kCclSuccess || !ValidDType(dtype) ||
      recvcounts == nullptr || displs == nullptr) {
    return kCclInvalidArgument;
  }
  const size_t n = static_cast<size_t>(call.comm->nranks());
  const size_t me = static_cast<size_t>(call.comm->rank());
  const size_t es = DTypeSize(dtype);
  if (recvcounts[me] != sendcount) return kCclInvalidArgument;  // this rank's block is s
  std::vector<size_t> bytes(n), offsets(n);
  size_t extent = 0;
  for (size_t p = 0; p < n; ++p) {
    size_t end;
    if (!Bytes(recvcounts[p], es, &bytes[p]) || !Bytes(displs[p], es, &offsets[p]) ||
        __builtin_add_overflow(offsets[p], bytes[p], &end)) {
      return kCclInvalidArgument;
    }
    if (bytes[p] > 0) extent = std::max(extent, end);
  }
  if (extent == 0) return kCclSuccess;
  char *sd, *rd;
  if (!DeviceBuffer(s, bytes[me], &call, &sd) || !DeviceBuffer(r, extent, &call, &rd)) {
    return kCclInvalidArgument;
  }
  call.part = AllGatherVPart(sd, rd, std::move(bytes), std::move(offsets));
  return Submit(api, std::move(st), std::move(call));
}

int CclAlltoAllv(CclApi api, const void* s, const size_t* scounts, const size_t* sdispls,
                 int stype, void* r, const size_t* rcounts, const size_t* rdispls, int rtype,
                 CommHandle comm, StreamHandle stream) {
  Call call;
  std::shared_ptr<Stream> st;
  if (Target(api, comm, stream, &call.comm, &st) != kCclSuccess || !ValidDType(stype) ||
      !ValidDType(rtype) || scounts == nullptr || sdispls == nullptr || rcounts == nullptr ||
      rdispls == nullptr) {
    return kCclInvalidArgument;
  }
  const size_t n = static_cast<size_t>(call.comm->nranks());
  const size_t me = static_cast<size_t>(call.comm->rank());
  // Counts are in elements of their own side's type.
  std::vector<size_t> sbytes(n), soffs(n), rbytes(n), roffs(n);
  size_t s_extent = 0, r_extent = 0;
  for (size_t p = 0; p < n; ++p) {
    size_t s_end, r_end;
    if (!Bytes(scounts[p], DTypeSize(stype), &sbytes[p]) ||
        !Bytes(sdispls[p], DTypeSize(stype), &soffs[p]) ||
        !Bytes(rcounts[p], DTypeSize(rtype), &rbytes[p]) ||
        !Bytes(rdispls[p], DTypeSize(rtype), &roffs[p]) ||
        __builtin_add_overflow(soffs[p], sbytes[p], &s_end) ||
        __builtin_add_overflow(roffs[p], rbytes[p], &r_end)) {
      return kCclInvalidArgument;
    }
    if (sbytes[p] > 0) s_extent = std::max(s_extent, s_end);
    if (rbytes[p] > 0) r_extent = std::max(r_extent, r_end);
  }
  if (sbytes[me] != rbytes[me]) return kCclInvalidArgument;  // the block a rank keeps
  if (s_extent == 0 && r_extent == 0) return kCclSuccess;
  char *sd, *rd;
  if (!DeviceBuffer(s, s_extent, &call, &sd) || !DeviceBuffer(r, r_extent, &call, &rd)) {
    return kCclInvalidArgument;
  }
  call.part = AlltoAllvPart(sd, std::move(sbytes), std::move(soffs), rd, std::move(rbytes),
                            std::move(roffs));
  return Submit(api, std::move(st), std::move(call));
}

}  // namespace hvda_emu
