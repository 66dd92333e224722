// libcudart_emu.so: the CUDA runtime names (API_SUBSET.md) over the emulated
// device. Only the names, the thread's last error and the error strings are
// CUDA's; everything else is libhvda_emu_core.
#include "emu_core.h"
#include "emu_vendor_api.h"

namespace {

using namespace hvda_emu;

// The thread's last error. Unlike TOPS, a NotReady query leaves none.
thread_local cudaError_t last_error = 0;

cudaError_t Ret(int result) {
  if (result != kRtSuccess && result != kRtNotReady) last_error = result;
  return result;
}

}  // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) { return Ret(RtGetDeviceCount(count)); }
cudaError_t cudaSetDevice(int device) { return Ret(RtSetDevice(device)); }
cudaError_t cudaGetDevice(int* device) { return Ret(RtGetDevice(device)); }
cudaError_t cudaMalloc(void** p, size_t n) { return Ret(RtMalloc(p, n)); }
cudaError_t cudaFree(void* p) { return Ret(RtFree(p)); }
cudaError_t cudaHostAlloc(void** p, size_t n, unsigned /*flags*/) {
  return Ret(RtHostAlloc(p, n));
}
cudaError_t cudaFreeHost(void* p) { return Ret(RtHostFree(p)); }
cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, int kind) {
  return Ret(RtMemcpy(dst, src, n, kind));
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, int kind, cudaStream_t stream) {
  return Ret(RtMemcpyAsync(dst, src, n, kind, stream));
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t n, cudaStream_t stream) {
  return Ret(RtMemsetAsync(p, value, n, stream));
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags) {
  return Ret(RtStreamCreate(reinterpret_cast<StreamHandle*>(stream), flags));
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) { return Ret(RtStreamDestroy(stream)); }
cudaError_t cudaStreamSynchronize(cudaStream_t stream) { return Ret(RtStreamSynchronize(stream)); }
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags) {
  return Ret(RtStreamWaitEvent(stream, event, flags));
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags) {
  return Ret(RtEventCreate(reinterpret_cast<EventHandle*>(event), flags));
}
cudaError_t cudaEventDestroy(cudaEvent_t event) { return Ret(RtEventDestroy(event)); }
cudaError_t cudaEventQuery(cudaEvent_t event) { return Ret(RtEventQuery(event)); }
cudaError_t cudaEventSynchronize(cudaEvent_t event) { return Ret(RtEventSynchronize(event)); }
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return Ret(RtEventRecord(event, stream));
}
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, void (*fn)(void*), void* arg) {
  return Ret(RtLaunchHostFunc(stream, fn, arg));
}

cudaError_t cudaGetLastError(void) {
  const cudaError_t e = last_error;
  last_error = 0;
  return e;
}

const char* cudaGetErrorString(cudaError_t err) {
  switch (err) {
    case kRtSuccess: return "cudaSuccess: no error";
    case kRtInvalidValue: return "cudaErrorInvalidValue: invalid argument";
    case kRtMemoryAllocation: return "cudaErrorMemoryAllocation: out of memory";
    case kRtNotReady: return "cudaErrorNotReady: device not ready";
    default: return "cudaErrorUnknown: unrecognized error code";
  }
}

}  // extern "C"
