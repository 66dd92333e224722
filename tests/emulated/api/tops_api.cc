// libtopsrt_emu.so: the TOPS runtime names (API_SUBSET.md) over the emulated
// device. Only the names, the thread's last error and the error strings are
// TOPS's; everything else is libhvda_emu_core.
#include "emu_core.h"
#include "emu_vendor_api.h"

namespace {

using namespace hvda_emu;

// The thread's last error. TOPS quirk: a NotReady event query leaves one
// too (sticky until topsGetLastError clears it).
thread_local topsError_t last_error = 0;

topsError_t Ret(int result) {
  if (result != kRtSuccess) last_error = result;
  return result;
}

}  // namespace

extern "C" {

topsError_t topsGetDeviceCount(int* count) { return Ret(RtGetDeviceCount(count)); }
topsError_t topsSetDevice(int device) { return Ret(RtSetDevice(device)); }
topsError_t topsGetDevice(int* device) { return Ret(RtGetDevice(device)); }
topsError_t topsMalloc(void** p, size_t n) { return Ret(RtMalloc(p, n)); }
topsError_t topsFree(void* p) { return Ret(RtFree(p)); }
topsError_t topsHostMalloc(void** p, size_t n, unsigned /*flags*/) {
  return Ret(RtHostAlloc(p, n));
}
topsError_t topsHostFree(void* p) { return Ret(RtHostFree(p)); }
topsError_t topsMemcpy(void* dst, const void* src, size_t n, int kind) {
  return Ret(RtMemcpy(dst, src, n, kind));
}
topsError_t topsMemcpyAsync(void* dst, const void* src, size_t n, int kind, topsStream_t stream) {
  return Ret(RtMemcpyAsync(dst, src, n, kind, stream));
}
topsError_t topsMemsetAsync(void* p, int value, size_t n, topsStream_t stream) {
  return Ret(RtMemsetAsync(p, value, n, stream));
}
topsError_t topsStreamCreateWithFlags(topsStream_t* stream, unsigned flags) {
  return Ret(RtStreamCreate(reinterpret_cast<StreamHandle*>(stream), flags));
}
topsError_t topsStreamDestroy(topsStream_t stream) { return Ret(RtStreamDestroy(stream)); }
topsError_t topsStreamSynchronize(topsStream_t stream) { return Ret(RtStreamSynchronize(stream)); }
topsError_t topsStreamWaitEvent(topsStream_t stream, topsEvent_t event, unsigned flags) {
  return Ret(RtStreamWaitEvent(stream, event, flags));
}
topsError_t topsEventCreateWithFlags(topsEvent_t* event, unsigned flags) {
  return Ret(RtEventCreate(reinterpret_cast<EventHandle*>(event), flags));
}
topsError_t topsEventDestroy(topsEvent_t event) { return Ret(RtEventDestroy(event)); }
topsError_t topsEventQuery(topsEvent_t event) { return Ret(RtEventQuery(event)); }
topsError_t topsEventSynchronize(topsEvent_t event) { return Ret(RtEventSynchronize(event)); }
topsError_t topsEventRecord(topsEvent_t event, topsStream_t stream) {
  return Ret(RtEventRecord(event, stream));
}
topsError_t topsLaunchHostFunc(topsStream_t stream, void (*fn)(void*), void* arg) {
  return Ret(RtLaunchHostFunc(stream, fn, arg));
}

topsError_t topsGetLastError(void) {
  const topsError_t e = last_error;
  last_error = 0;
  return e;
}

const char* topsGetErrorString(topsError_t err) {
  switch (err) {
    case kRtSuccess: return "topsSuccess: no error";
    case kRtInvalidValue: return "topsErrorInvalidValue: invalid argument";
    case kRtMemoryAllocation: return "topsErrorMemoryAllocation: out of memory";
    case kRtNotReady: return "topsErrorNotReady: device work not completed yet";
    default: return "topsErrorUnknown: unrecognized error code";
  }
}

}  // extern "C"
