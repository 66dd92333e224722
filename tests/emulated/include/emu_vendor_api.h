// The vendor API subset of API_SUBSET.md as C declarations: the TOPS and CUDA
// runtimes, ECCL and NCCL. The emulated libraries define these functions
// (api/*.cc; the compiler checks every definition against its declaration
// here) and the emulation's own tests call them. Types are the ABI-equivalent
// plain ones (error enums are ints, handles opaque pointers): no vendor header
// is needed or included.
#pragma once

#include <stddef.h>

#define HVDA_EMU_EXPORT __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- TOPS */
typedef int topsError_t;
typedef struct hvdaEmuStream* topsStream_t;
typedef struct hvdaEmuEvent* topsEvent_t;

HVDA_EMU_EXPORT topsError_t topsGetDeviceCount(int* count);
HVDA_EMU_EXPORT topsError_t topsSetDevice(int device);
HVDA_EMU_EXPORT topsError_t topsGetDevice(int* device);
HVDA_EMU_EXPORT topsError_t topsMalloc(void** p, size_t n);
HVDA_EMU_EXPORT topsError_t topsFree(void* p);
HVDA_EMU_EXPORT topsError_t topsHostMalloc(void** p, size_t n, unsigned flags);
HVDA_EMU_EXPORT topsError_t topsHostFree(void* p);
HVDA_EMU_EXPORT topsError_t topsMemcpy(void* dst, const void* src, size_t n, int kind);
HVDA_EMU_EXPORT topsError_t topsMemcpyAsync(void* dst, const void* src, size_t n, int kind,
                                            topsStream_t stream);
HVDA_EMU_EXPORT topsError_t topsMemsetAsync(void* p, int value, size_t n, topsStream_t stream);
HVDA_EMU_EXPORT topsError_t topsStreamCreateWithFlags(topsStream_t* stream, unsigned flags);
HVDA_EMU_EXPORT topsError_t topsStreamDestroy(topsStream_t stream);
HVDA_EMU_EXPORT topsError_t topsStreamSynchronize(topsStream_t stream);
HVDA_EMU_EXPORT topsError_t topsStreamWaitEvent(topsStream_t stream, topsEvent_t event,
                                                unsigned flags);
HVDA_EMU_EXPORT topsError_t topsEventCreateWithFlags(topsEvent_t* event, unsigned flags);
HVDA_EMU_EXPORT topsError_t topsEventDestroy(topsEvent_t event);
HVDA_EMU_EXPORT topsError_t topsEventQuery(topsEvent_t event);
HVDA_EMU_EXPORT topsError_t topsEventSynchronize(topsEvent_t event);
HVDA_EMU_EXPORT topsError_t topsEventRecord(topsEvent_t event, topsStream_t stream);
HVDA_EMU_EXPORT topsError_t topsLaunchHostFunc(topsStream_t stream, void (*fn)(void*),
                                               void* arg);
HVDA_EMU_EXPORT topsError_t topsGetLastError(void);
HVDA_EMU_EXPORT const char* topsGetErrorString(topsError_t err);

/* ---------------------------------------------------------------- CUDA */
typedef int cudaError_t;
typedef struct hvdaEmuStream* cudaStream_t;
typedef struct hvdaEmuEvent* cudaEvent_t;

HVDA_EMU_EXPORT cudaError_t cudaGetDeviceCount(int* count);
HVDA_EMU_EXPORT cudaError_t cudaSetDevice(int device);
HVDA_EMU_EXPORT cudaError_t cudaGetDevice(int* device);
HVDA_EMU_EXPORT cudaError_t cudaMalloc(void** p, size_t n);
HVDA_EMU_EXPORT cudaError_t cudaFree(void* p);
HVDA_EMU_EXPORT cudaError_t cudaHostAlloc(void** p, size_t n, unsigned flags);
HVDA_EMU_EXPORT cudaError_t cudaFreeHost(void* p);
HVDA_EMU_EXPORT cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, int kind);
HVDA_EMU_EXPORT cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, int kind,
                                            cudaStream_t stream);
HVDA_EMU_EXPORT cudaError_t cudaMemsetAsync(void* p, int value, size_t n, cudaStream_t stream);
HVDA_EMU_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
HVDA_EMU_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream);
HVDA_EMU_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream);
HVDA_EMU_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                                unsigned flags);
HVDA_EMU_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags);
HVDA_EMU_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t event);
HVDA_EMU_EXPORT cudaError_t cudaEventQuery(cudaEvent_t event);
HVDA_EMU_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event);
HVDA_EMU_EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
HVDA_EMU_EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t stream, void (*fn)(void*),
                                               void* arg);
HVDA_EMU_EXPORT cudaError_t cudaGetLastError(void);
HVDA_EMU_EXPORT const char* cudaGetErrorString(cudaError_t err);

/* ---------------------------------------------------------------- ECCL */
typedef int ecclResult_t;
typedef struct { char internal[128]; } ecclUniqueId;
typedef struct hvdaEmuComm* ecclComm_t;

HVDA_EMU_EXPORT ecclResult_t ecclGetVersion(int* version);
HVDA_EMU_EXPORT const char* ecclGetErrorString(ecclResult_t result);
HVDA_EMU_EXPORT ecclResult_t ecclGetUniqueId(ecclUniqueId* id);
HVDA_EMU_EXPORT ecclResult_t ecclCommInitRank(ecclComm_t* comm, int nranks, ecclUniqueId id,
                                              int rank);
HVDA_EMU_EXPORT ecclResult_t ecclCommDestroy(ecclComm_t comm);
HVDA_EMU_EXPORT ecclResult_t ecclCommAbort(ecclComm_t comm);
HVDA_EMU_EXPORT ecclResult_t ecclCommGetAsyncError(ecclComm_t comm, ecclResult_t* result);
HVDA_EMU_EXPORT ecclResult_t ecclAllReduce(const void* s, void* r, size_t count, int dtype,
                                           int op, ecclComm_t comm, topsStream_t stream);
HVDA_EMU_EXPORT ecclResult_t ecclBroadcast(const void* s, void* r, size_t count, int dtype,
                                           int root, ecclComm_t comm, topsStream_t stream);
HVDA_EMU_EXPORT ecclResult_t ecclAllGather(const void* s, void* r, size_t sendcount, int dtype,
                                           ecclComm_t comm, topsStream_t stream);
HVDA_EMU_EXPORT ecclResult_t ecclReduceScatter(const void* s, void* r, size_t recvcount,
                                               int dtype, int op, ecclComm_t comm,
                                               topsStream_t stream);
HVDA_EMU_EXPORT ecclResult_t ecclSend(const void* s, size_t count, int dtype, int peer,
                                      ecclComm_t comm, topsStream_t stream);
HVDA_EMU_EXPORT ecclResult_t ecclRecv(void* r, size_t count, int dtype, int peer,
                                      ecclComm_t comm, topsStream_t stream);
HVDA_EMU_EXPORT ecclResult_t ecclGroupStart(void);
HVDA_EMU_EXPORT ecclResult_t ecclGroupEnd(void);
HVDA_EMU_EXPORT ecclResult_t ecclRedOpCreatePreMulSum(int* op, void* scalar, int dtype,
                                                      int residence, ecclComm_t comm);
HVDA_EMU_EXPORT ecclResult_t ecclRedOpDestroy(int op, ecclComm_t comm);
HVDA_EMU_EXPORT ecclResult_t ecclAllGatherV(const void* s, size_t sendcount, void* r,
                                            const size_t* recvcounts, const size_t* displs,
                                            int dtype, ecclComm_t comm, topsStream_t stream);
HVDA_EMU_EXPORT ecclResult_t ecclAlltoAllv(const void* s, const size_t* scounts,
                                           const size_t* sdispls, int stype, void* r,
                                           const size_t* rcounts, const size_t* rdispls,
                                           int rtype, ecclComm_t comm, topsStream_t stream);

/* ---------------------------------------------------------------- NCCL */
typedef int ncclResult_t;
typedef struct { char internal[128]; } ncclUniqueId;
typedef struct hvdaEmuComm* ncclComm_t;

HVDA_EMU_EXPORT ncclResult_t ncclGetVersion(int* version);
HVDA_EMU_EXPORT const char* ncclGetErrorString(ncclResult_t result);
HVDA_EMU_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* id);
HVDA_EMU_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id,
                                              int rank);
HVDA_EMU_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm);
HVDA_EMU_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm);
HVDA_EMU_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* result);
HVDA_EMU_EXPORT ncclResult_t ncclAllReduce(const void* s, void* r, size_t count, int dtype,
                                           int op, ncclComm_t comm, cudaStream_t stream);
HVDA_EMU_EXPORT ncclResult_t ncclBroadcast(const void* s, void* r, size_t count, int dtype,
                                           int root, ncclComm_t comm, cudaStream_t stream);
HVDA_EMU_EXPORT ncclResult_t ncclAllGather(const void* s, void* r, size_t sendcount, int dtype,
                                           ncclComm_t comm, cudaStream_t stream);
HVDA_EMU_EXPORT ncclResult_t ncclReduceScatter(const void* s, void* r, size_t recvcount,
                                               int dtype, int op, ncclComm_t comm,
                                               cudaStream_t stream);
HVDA_EMU_EXPORT ncclResult_t ncclSend(const void* s, size_t count, int dtype, int peer,
                                      ncclComm_t comm, cudaStream_t stream);
HVDA_EMU_EXPORT ncclResult_t ncclRecv(void* r, size_t count, int dtype, int peer,
                                      ncclComm_t comm, cudaStream_t stream);
HVDA_EMU_EXPORT ncclResult_t ncclGroupStart(void);
HVDA_EMU_EXPORT ncclResult_t ncclGroupEnd(void);
HVDA_EMU_EXPORT ncclResult_t ncclRedOpCreatePreMulSum(int* op, void* scalar, int dtype,
                                                      int residence, ncclComm_t comm);
HVDA_EMU_EXPORT ncclResult_t ncclRedOpDestroy(int op, ncclComm_t comm);

#ifdef __cplusplus
}
#endif
