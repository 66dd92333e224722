// libeccl_emu.so: the ECCL names (API_SUBSET.md) over the emulated
// collective engine; streams are TOPS streams. ECCL numbering: a lost peer
// is a system error (ECCL has no remote error) and in-progress is 6.
#include "emu_core.h"
#include "emu_vendor_api.h"

namespace {

using namespace hvda_emu;
constexpr CclApi kApi = CclApi::kEccl;

ecclResult_t Map(int result) {
  switch (result) {
    case kCclRemote: return 2;      // ecclSystemError
    case kCclInProgress: return 6;  // ecclInProgress
    default: return result;         // 0..5 are numbered alike
  }
}

}  // namespace

extern "C" {

ecclResult_t ecclGetVersion(int* version) {
  if (version == nullptr) return Map(kCclInvalidArgument);
  *version = 30000;  // reported as ECCL 3.0.0
  return 0;
}

const char* ecclGetErrorString(ecclResult_t result) {
  switch (result) {
    case 0: return "ecclSuccess: no error";
    case 1: return "ecclUnhandledTopsError: unhandled TOPS runtime error";
    case 2: return "ecclSystemError: system error (a peer may be gone)";
    case 3: return "ecclInternalError: internal error";
    case 4: return "ecclInvalidArgument: invalid argument";
    case 5: return "ecclInvalidUsage: invalid usage";
    case 6: return "ecclInProgress: operation in progress";
    default: return "ecclUnknownError: unrecognized result code";
  }
}

ecclResult_t ecclGetUniqueId(ecclUniqueId* id) {
  return Map(CclGetUniqueId(id == nullptr ? nullptr : id->internal));
}
ecclResult_t ecclCommInitRank(ecclComm_t* comm, int nranks, ecclUniqueId id, int rank) {
  return Map(CclCommInitRank(kApi, reinterpret_cast<CommHandle*>(comm), nranks, id.internal, rank));
}
ecclResult_t ecclCommDestroy(ecclComm_t comm) { return Map(CclCommDestroy(kApi, comm)); }
ecclResult_t ecclCommAbort(ecclComm_t comm) { return Map(CclCommAbort(kApi, comm)); }
ecclResult_t ecclCommGetAsyncError(ecclComm_t comm, ecclResult_t* result) {
  int r = 0;
  const int rc = CclCommGetAsyncError(kApi, comm, &r);
  if (rc == kCclSuccess && result != nullptr) *result = Map(r);
  return Map(rc);
}
ecclResult_t ecclAllReduce(const void* s, void* r, size_t count, int dtype, int op,
                           ecclComm_t comm, topsStream_t stream) {
  return Map(CclAllReduce(kApi, s, r, count, dtype, op, comm, stream));
}
ecclResult_t ecclBroadcast(const void* s, void* r, size_t count, int dtype, int root,
                           ecclComm_t comm, topsStream_t stream) {
  return Map(CclBroadcast(kApi, s, r, count, dtype, root, comm, stream));
}
ecclResult_t ecclAllGather(const void* s, void* r, size_t sendcount, int dtype, ecclComm_t comm,
                           topsStream_t stream) {
  return Map(CclAllGather(kApi, s, r, sendcount, dtype, comm, stream));
}
ecclResult_t ecclReduceScatter(const void* s, void* r, size_t recvcount, int dtype, int op,
                               ecclComm_t comm, topsStream_t stream) {
  return Map(CclReduceScatter(kApi, s, r, recvcount, dtype, op, comm, stream));
}
ecclResult_t ecclSend(const void* s, size_t count, int dtype, int peer, ecclComm_t comm,
                      topsStream_t stream) {
  return Map(CclSend(kApi, s, count, dtype, peer, comm, stream));
}
ecclResult_t ecclRecv(void* r, size_t count, int dtype, int peer, ecclComm_t comm,
                      topsStream_t stream) {
  return Map(CclRecv(kApi, r, count, dtype, peer, comm, stream));
}
ecclResult_t ecclGroupStart(void) { return Map(CclGroupStart(kApi)); }
ecclResult_t ecclGroupEnd(void) { return Map(CclGroupEnd(kApi)); }
ecclResult_t ecclRedOpCreatePreMulSum(int* op, void* scalar, int dtype, int residence,
                                      ecclComm_t comm) {
  return Map(CclRedOpCreatePreMulSum(kApi, op, scalar, dtype, residence, comm));
}
ecclResult_t ecclRedOpDestroy(int op, ecclComm_t comm) {
  return Map(CclRedOpDestroy(kApi, op, comm));
}
ecclResult_t ecclAllGatherV(const void* s, size_t sendcount, void* r, const size_t* recvcounts,
                            const size_t* displs, int dtype, ecclComm_t comm,
                            topsStream_t stream) {
  return Map(CclAllGatherV(kApi, s, sendcount, r, recvcounts, displs, dtype, comm, stream));
}
ecclResult_t ecclAlltoAllv(const void* s, const size_t* scounts, const size_t* sdispls, int stype,
                           void* r, const size_t* rcounts, const size_t* rdispls, int rtype,
                           ecclComm_t comm, topsStream_t stream) {
  return Map(CclAlltoAllv(kApi, s, scounts, sdispls, stype, r, rcounts, rdispls, rtype, comm,
                          stream));
}

}  // extern "C"
