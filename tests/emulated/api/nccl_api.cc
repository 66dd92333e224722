// libnccl_emu.so: the NCCL names (API_SUBSET.md) over the emulated
// collective engine; streams are CUDA streams. The engine numbers results
// as NCCL does. No AllGatherV / AlltoAllv: NCCL has none.
#include "emu_core.h"
#include "emu_vendor_api.h"

namespace {

using namespace hvda_emu;
constexpr CclApi kApi = CclApi::kNccl;

}  // namespace

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return kCclInvalidArgument;
  *version = 22105;  // reported as NCCL 2.21.5
  return kCclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case kCclSuccess: return "no error";
    case kCclUnhandledRuntime: return "unhandled cuda error";
    case kCclSystem: return "unhandled system error";
    case kCclInternal: return "internal error";
    case kCclInvalidArgument: return "invalid argument";
    case kCclInvalidUsage: return "invalid usage";
    case kCclRemote: return "remote process exited or there was a network error";
    case kCclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  return CclGetUniqueId(id == nullptr ? nullptr : id->internal);
}
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return CclCommInitRank(kApi, reinterpret_cast<CommHandle*>(comm), nranks, id.internal, rank);
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) { return CclCommDestroy(kApi, comm); }
ncclResult_t ncclCommAbort(ncclComm_t comm) { return CclCommAbort(kApi, comm); }
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* result) {
  return CclCommGetAsyncError(kApi, comm, result);
}
ncclResult_t ncclAllReduce(const void* s, void* r, size_t count, int dtype, int op,
                           ncclComm_t comm, cudaStream_t stream) {
  return CclAllReduce(kApi, s, r, count, dtype, op, comm, stream);
}
ncclResult_t ncclBroadcast(const void* s, void* r, size_t count, int dtype, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  return CclBroadcast(kApi, s, r, count, dtype, root, comm, stream);
}
ncclResult_t ncclAllGather(const void* s, void* r, size_t sendcount, int dtype, ncclComm_t comm,
                           cudaStream_t stream) {
  return CclAllGather(kApi, s, r, sendcount, dtype, comm, stream);
}
ncclResult_t ncclReduceScatter(const void* s, void* r, size_t recvcount, int dtype, int op,
                               ncclComm_t comm, cudaStream_t stream) {
  return CclReduceScatter(kApi, s, r, recvcount, dtype, op, comm, stream);
}
ncclResult_t ncclSend(const void* s, size_t count, int dtype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return CclSend(kApi, s, count, dtype, peer, comm, stream);
}
ncclResult_t ncclRecv(void* r, size_t count, int dtype, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  return CclRecv(kApi, r, count, dtype, peer, comm, stream);
}
ncclResult_t ncclGroupStart(void) { return CclGroupStart(kApi); }
ncclResult_t ncclGroupEnd(void) { return CclGroupEnd(kApi); }
ncclResult_t ncclRedOpCreatePreMulSum(int* op, void* scalar, int dtype, int residence,
                                      ncclComm_t comm) {
  return CclRedOpCreatePreMulSum(kApi, op, scalar, dtype, residence, comm);
}
ncclResult_t ncclRedOpDestroy(int op, ncclComm_t comm) { return CclRedOpDestroy(kApi, op, comm); }

}  // extern "C"
