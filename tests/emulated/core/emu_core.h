// libhvda_emu_core: the emulated device and collective engine behind the four
// vendor-named libraries (libtopsrt_emu, libcudart_emu: runtimes; libeccl_emu,
// libnccl_emu: collectives). Those are thin: they rename, map result codes
// and keep per-API quirks (TOPS's sticky NotReady); everything else is here,
// once.
//
// NOTE [One process-wide instance]: the engine's state (device memory, the
// streams and their worker threads, current devices, communicators) is
// process-wide, as a real driver's is, so that all four libraries - each
// linking this one - see the same devices, streams and memory. It is the only
// place in the project where process-wide state is acceptable. The library is
// linked with -z nodelete: a plugin's dlclose() must never unload code that
// worker threads run.
//
// Semantics, knobs and what each call validates: README.md and
// API_SUBSET.md in this folder.
#pragma once

#include <cstddef>
#include <cstdint>

#define HVDA_EMU_CORE_API __attribute__((visibility("default")))

namespace hvda_emu {

// ------------------------------------------------------------------ runtime
// Results of the runtime calls, numbered as TOPS and CUDA number them.
enum RtResult : int {
  kRtSuccess = 0,
  kRtInvalidValue = 1,
  kRtMemoryAllocation = 2,
  kRtNotReady = 600,
};

// Memcpy kinds (API_SUBSET.md).
enum MemcpyKind : int { kHostToHost = 0, kHostToDevice = 1, kDeviceToHost = 2, kDeviceToDevice = 3 };

// Opaque handles as the vendor APIs pass them. A null stream is the calling
// thread's current device's default stream.
using StreamHandle = void*;
using EventHandle = void*;
using HostFn = void (*)(void*);

// None of these block unless stated. Every pointer argument is validated:
// device-side pointers (with their byte range) must be device memory of this
// process, host-side pointers must not be (else kRtInvalidValue).
HVDA_EMU_CORE_API int RtGetDeviceCount(int* count);
HVDA_EMU_CORE_API int RtSetDevice(int device);  // the calling thread's current device
HVDA_EMU_CORE_API int RtGetDevice(int* device);
HVDA_EMU_CORE_API int RtMalloc(void** p, size_t n);  // never host-dereferenceable
HVDA_EMU_CORE_API int RtFree(void* p);  // memory lives on until queued work using it ran
HVDA_EMU_CORE_API int RtHostAlloc(void** p, size_t n);  // ordinary host memory
HVDA_EMU_CORE_API int RtHostFree(void* p);
// Blocks until the copy ran on the current device's default stream.
HVDA_EMU_CORE_API int RtMemcpy(void* dst, const void* src, size_t n, int kind);
// Host memory given to async calls must stay valid until the stream ran them.
HVDA_EMU_CORE_API int RtMemcpyAsync(void* dst, const void* src, size_t n, int kind,
                                    StreamHandle s);
HVDA_EMU_CORE_API int RtMemsetAsync(void* p, int value, size_t n, StreamHandle s);
HVDA_EMU_CORE_API int RtStreamCreate(StreamHandle* s, unsigned flags);
HVDA_EMU_CORE_API int RtStreamDestroy(StreamHandle s);      // blocks: drains the stream first
HVDA_EMU_CORE_API int RtStreamSynchronize(StreamHandle s);  // blocks
HVDA_EMU_CORE_API int RtStreamWaitEvent(StreamHandle s, EventHandle e, unsigned flags);
HVDA_EMU_CORE_API int RtEventCreate(EventHandle* e, unsigned flags);
HVDA_EMU_CORE_API int RtEventDestroy(EventHandle e);
HVDA_EMU_CORE_API int RtEventQuery(EventHandle e);        // kRtSuccess or kRtNotReady
HVDA_EMU_CORE_API int RtEventSynchronize(EventHandle e);  // blocks
HVDA_EMU_CORE_API int RtEventRecord(EventHandle e, StreamHandle s);
HVDA_EMU_CORE_API int RtLaunchHostFunc(StreamHandle s, HostFn fn, void* arg);

// ------------------------------------------------- emulated device compute
// Not part of the vendor API subset: the emulation's own TF device plugin
// (tf_gcu/) runs its "device kernels" with it, so that compute happens on a
// stream without the host ever touching device memory.
//
// shadows[i] is where the worker may read and write device range i.
using KernelFn = void (*)(void* arg, char* const* shadows);

// Enqueues fn(arg, shadows) on stream s; it runs on the stream's worker,
// after the work enqueued before it and before the work enqueued after it.
// Range i is [device_ptrs[i], device_ptrs[i] + sizes[i]); each non-empty one
// must lie in one live allocation (as a copy's device side must), an empty
// one is not checked and gets a null shadow. The ranges stay mapped until fn
// returned, even if freed meanwhile. The arrays are read during the call
// only. arg belongs to the caller: fn frees it if it must; when the call
// fails (kRtInvalidValue: bad stream, null fn, n < 0, a range outside device
// memory) fn never runs and arg is untouched.
HVDA_EMU_CORE_API int RtLaunchKernel(StreamHandle s, KernelFn fn, void* arg,
                                     const void* const* device_ptrs, const size_t* sizes, int n);

// -------------------------------------------------------------- collectives
// Results, numbered as NCCL numbers them; the ECCL library maps kCclRemote
// (ECCL has none: a lost peer is its system error) and kCclInProgress.
enum CclResult : int {
  kCclSuccess = 0,
  kCclUnhandledRuntime = 1,
  kCclSystem = 2,
  kCclInternal = 3,
  kCclInvalidArgument = 4,
  kCclInvalidUsage = 5,
  kCclRemote = 6,
  kCclInProgress = 7,
};

// Which vendor API a call came through. Communicator handles and group
// state are per API: an NCCL communicator is not an ECCL one.
enum class CclApi : int { kEccl = 0, kNccl = 1 };
constexpr int kNumCclApis = 2;

constexpr size_t kUniqueIdBytes = 128;
using CommHandle = void*;

HVDA_EMU_CORE_API int CclGetUniqueId(char id[kUniqueIdBytes]);
// Blocks until all nranks called it with the same id (rendezvous in POSIX
// shared memory), or fails with kCclSystem after HVDA_EMU_INIT_TIMEOUT_SECONDS.
HVDA_EMU_CORE_API int CclCommInitRank(CclApi api, CommHandle* comm, int nranks,
                                      const char id[kUniqueIdBytes], int rank);
// Invalidates the handle; resources go when queued work using them ran.
HVDA_EMU_CORE_API int CclCommDestroy(CclApi api, CommHandle comm);
// Invalidates the handle; queued and running work on it finishes at once.
HVDA_EMU_CORE_API int CclCommAbort(CclApi api, CommHandle comm);
HVDA_EMU_CORE_API int CclCommGetAsyncError(CclApi api, CommHandle comm, int* result);

// Collectives are validated, then enqueued on the stream (or recorded, in a
// group) and return at once; the stream's worker runs them. Counts are in
// elements.
HVDA_EMU_CORE_API int CclAllReduce(CclApi api, const void* s, void* r, size_t count, int dtype,
                                   int op, CommHandle comm, StreamHandle stream);
HVDA_EMU_CORE_API int CclBroadcast(CclApi api, const void* s, void* r, size_t count, int dtype,
                                   int root, CommHandle comm, StreamHandle stream);
HVDA_EMU_CORE_API int CclAllGather(CclApi api, const void* s, void* r, size_t sendcount,
                                   int dtype, CommHandle comm, StreamHandle stream);
HVDA_EMU_CORE_API int CclReduceScatter(CclApi api, const void* s, void* r, size_t recvcount,
                                       int dtype, int op, CommHandle comm, StreamHandle stream);
HVDA_EMU_CORE_API int CclSend(CclApi api, const void* s, size_t count, int dtype, int peer,
                              CommHandle comm, StreamHandle stream);
HVDA_EMU_CORE_API int CclRecv(CclApi api, void* r, size_t count, int dtype, int peer,
                              CommHandle comm, StreamHandle stream);
HVDA_EMU_CORE_API int CclAllGatherV(CclApi api, const void* s, size_t sendcount, void* r,
                                    const size_t* recvcounts, const size_t* displs, int dtype,
                                    CommHandle comm, StreamHandle stream);
HVDA_EMU_CORE_API int CclAlltoAllv(CclApi api, const void* s, const size_t* scounts,
                                   const size_t* sdispls, int stype, void* r,
                                   const size_t* rcounts, const size_t* rdispls, int rtype,
                                   CommHandle comm, StreamHandle stream);
// Per calling thread and API: calls between start and the outermost end are
// enqueued at that end, one stream operation per stream, progressing
// together.
HVDA_EMU_CORE_API int CclGroupStart(CclApi api);
HVDA_EMU_CORE_API int CclGroupEnd(CclApi api);
// Residence 1 (host immediate) only: *scalar (of dtype) is read at the call.
HVDA_EMU_CORE_API int CclRedOpCreatePreMulSum(CclApi api, int* op, const void* scalar, int dtype,
                                              int residence, CommHandle comm);
HVDA_EMU_CORE_API int CclRedOpDestroy(CclApi api, int op, CommHandle comm);

}  // namespace hvda_emu

// The copy counters (copy_counts.h), with C linkage for ctypes: out = {host
// to device calls, host to device bytes, device to host calls, device to host
// bytes}, counted process-wide, when RtMemcpy / RtMemcpyAsync (any API's
// names) enqueue a valid copy. Device-to-device and host-to-host copies are
// not counted.
extern "C" HVDA_EMU_CORE_API void hvda_emu_copy_counts(uint64_t out[4]);
