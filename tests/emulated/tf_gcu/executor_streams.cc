// The SP_StreamExecutor's stream functions: streams and events as TOPS
// streams and events, copies and memsets enqueued on them, host callbacks
// through topsLaunchHostFunc, and the host-blocking waits. Nothing here
// blocks unless its name says so (sync_*, block_*, synchronize_*,
// destroy_stream, which drains).
#include <cstdio>

#include "emu_core.h"
#include "gcu_plugin.h"

namespace hvda_tf_gcu {
namespace {

enum { kH2D = 1, kD2H = 2, kD2D = 3 };  // TOPS memcpy kinds (API_SUBSET.md)
constexpr topsError_t kNotReady = 600;
constexpr unsigned kNonBlocking = 1;     // topsStreamCreateWithFlags
constexpr unsigned kDisableTiming = 2;   // topsEventCreateWithFlags

void CreateStream(const SP_Device* device, SP_Stream* stream, TF_Status* status) {
  *stream = nullptr;
  topsStream_t s = nullptr;
  if (!TopsOk(topsSetDevice(device->ordinal), "topsSetDevice", status) ||
      !TopsOk(topsStreamCreateWithFlags(&s, kNonBlocking), "topsStreamCreateWithFlags", status)) {
    return;
  }
  *stream = new SP_Stream_st{s, device->ordinal};
  Device(device)->AddStream(*stream);
}

// Drains the stream (topsStreamDestroy blocks until its work ran).
void DestroyStream(const SP_Device* device, SP_Stream stream) {
  if (stream == nullptr) return;
  Device(device)->RemoveStream(stream);
  if (topsStreamDestroy(stream->stream) != 0) topsGetLastError();
  delete stream;
}

// `dependent` waits (on the device) for what `other` has enqueued so far:
// an event recorded on other, waited for by dependent. Destroying the event
// at once is fine: the wait is bound to that record.
void CreateStreamDependency(const SP_Device* /*device*/, SP_Stream dependent, SP_Stream other,
                            TF_Status* status) {
  topsEvent_t e = nullptr;
  if (!TopsOk(topsEventCreateWithFlags(&e, kDisableTiming), "topsEventCreateWithFlags", status)) {
    return;
  }
  if (TopsOk(topsEventRecord(e, other->stream), "topsEventRecord", status)) {
    TopsOk(topsStreamWaitEvent(dependent->stream, e, 0), "topsStreamWaitEvent", status);
  }
  topsEventDestroy(e);
}

// The emulated streams have no error state of their own: a failing call
// reports through its own result.
void GetStreamStatus(const SP_Device* /*device*/, SP_Stream /*stream*/, TF_Status* status) {
  TF_SetStatus(status, TF_OK, "");
}

void CreateEvent(const SP_Device* /*device*/, SP_Event* event, TF_Status* status) {
  *event = nullptr;
  topsEvent_t e = nullptr;
  if (TopsOk(topsEventCreateWithFlags(&e, kDisableTiming), "topsEventCreateWithFlags", status)) {
    *event = new SP_Event_st{e};
  }
}

void DestroyEvent(const SP_Device* /*device*/, SP_Event event) {
  if (event == nullptr) return;
  if (topsEventDestroy(event->event) != 0) topsGetLastError();
  delete event;
}

SE_EventStatus GetEventStatus(const SP_Device* /*device*/, SP_Event event) {
  const topsError_t rc = topsEventQuery(event->event);
  if (rc == 0) return SE_EVENT_COMPLETE;
  topsGetLastError();  // TOPS: a NotReady query leaves a sticky last error
  return rc == kNotReady ? SE_EVENT_PENDING : SE_EVENT_ERROR;
}

void RecordEvent(const SP_Device* /*device*/, SP_Stream stream, SP_Event event,
                 TF_Status* status) {
  TopsOk(topsEventRecord(event->event, stream->stream), "topsEventRecord", status);
}

void WaitForEvent(const SP_Device* const /*device*/, SP_Stream stream, SP_Event event,
                  TF_Status* const status) {
  TopsOk(topsStreamWaitEvent(stream->stream, event->event, 0), "topsStreamWaitEvent", status);
}

// Asynchronous copies: TF keeps the host side valid until the stream ran
// them.
void MemcpyDtoH(const SP_Device* /*device*/, SP_Stream stream, void* host_dst,
                const SP_DeviceMemoryBase* device_src, uint64_t size, TF_Status* status) {
  TopsOk(topsMemcpyAsync(host_dst, device_src->opaque, size, kD2H, stream->stream),
         "topsMemcpyAsync (device to host)", status);
}

void MemcpyHtoD(const SP_Device* /*device*/, SP_Stream stream, SP_DeviceMemoryBase* device_dst,
                const void* host_src, uint64_t size, TF_Status* status) {
  TopsOk(topsMemcpyAsync(device_dst->opaque, host_src, size, kH2D, stream->stream),
         "topsMemcpyAsync (host to device)", status);
}

void MemcpyDtoD(const SP_Device* /*device*/, SP_Stream stream, SP_DeviceMemoryBase* device_dst,
                const SP_DeviceMemoryBase* device_src, uint64_t size, TF_Status* status) {
  TopsOk(topsMemcpyAsync(device_dst->opaque, device_src->opaque, size, kD2D, stream->stream),
         "topsMemcpyAsync (device to device)", status);
}

// Synchronous copies: topsMemcpy, which runs on the device's default
// stream and blocks. Like the vendor call, it does not wait for TF's own
// streams; TF orders those itself before it asks for a synchronous copy.
void SyncCopy(const SP_Device* device, void* dst, const void* src, uint64_t size, int kind,
              TF_Status* status) {
  if (TopsOk(topsSetDevice(device->ordinal), "topsSetDevice", status)) {
    TopsOk(topsMemcpy(dst, src, size, kind), "topsMemcpy", status);
  }
}

void SyncMemcpyDtoH(const SP_Device* device, void* host_dst,
                    const SP_DeviceMemoryBase* device_src, uint64_t size, TF_Status* status) {
  SyncCopy(device, host_dst, device_src->opaque, size, kD2H, status);
}

void SyncMemcpyHtoD(const SP_Device* device, SP_DeviceMemoryBase* device_dst,
                    const void* host_src, uint64_t size, TF_Status* status) {
  SyncCopy(device, device_dst->opaque, host_src, size, kH2D, status);
}

void SyncMemcpyDtoD(const SP_Device* device, SP_DeviceMemoryBase* device_dst,
                    const SP_DeviceMemoryBase* device_src, uint64_t size, TF_Status* status) {
  SyncCopy(device, device_dst->opaque, device_src->opaque, size, kD2D, status);
}

void BlockHostForEvent(const SP_Device* /*device*/, SP_Event event, TF_Status* status) {
  TopsOk(topsEventSynchronize(event->event), "topsEventSynchronize", status);
}

void BlockHostUntilDone(const SP_Device* /*device*/, SP_Stream stream, TF_Status* status) {
  TopsOk(topsStreamSynchronize(stream->stream), "topsStreamSynchronize", status);
}

void SynchronizeAllActivity(const SP_Device* device, TF_Status* status) {
  TopsOk(Device(device)->SynchronizeAll(), "topsStreamSynchronize (all streams)", status);
}

void MemZero(const SP_Device* /*device*/, SP_Stream stream, SP_DeviceMemoryBase* location,
             uint64_t size, TF_Status* status) {
  TopsOk(topsMemsetAsync(location->opaque, 0, size, stream->stream), "topsMemsetAsync", status);
}

void Memset(const SP_Device* /*device*/, SP_Stream stream, SP_DeviceMemoryBase* location,
            uint8_t pattern, uint64_t size, TF_Status* status) {
  TopsOk(topsMemsetAsync(location->opaque, pattern, size, stream->stream), "topsMemsetAsync",
         status);
}

// The TOPS subset has no 32-bit memset: a device kernel writes the pattern.
struct Fill32 {
  uint32_t pattern;
  uint64_t count;
  static void Run(void* arg, char* const* shadows) {
    auto* f = static_cast<Fill32*>(arg);
    auto* out = reinterpret_cast<uint32_t*>(shadows[0]);
    for (uint64_t i = 0; i < f->count; ++i) out[i] = f->pattern;
    delete f;
  }
};

void Memset32(const SP_Device* /*device*/, SP_Stream stream, SP_DeviceMemoryBase* location,
              uint32_t pattern, uint64_t size, TF_Status* status) {
  if (size % 4 != 0) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT, "GCU memset32: size is not a multiple of 4");
    return;
  }
  if (size == 0) return;
  auto* fill = new Fill32{pattern, size / 4};
  const void* ptrs[] = {location->opaque};
  const size_t sizes[] = {static_cast<size_t>(size)};
  const int rc = hvda_emu::RtLaunchKernel(stream->stream, Fill32::Run, fill, ptrs, sizes, 1);
  if (rc != 0) delete fill;
  TopsOk(rc, "memset32 kernel launch", status);
}

// A host callback: runs on the stream's worker after earlier work. TF's
// callback reports through a status no caller can see, so a failure is
// printed.
struct HostCallback {
  SE_StatusCallbackFn fn;
  void* arg;
  static void Run(void* p) {
    auto* cb = static_cast<HostCallback*>(p);
    TF_Status* status = TF_NewStatus();
    cb->fn(cb->arg, status);
    if (TF_GetCode(status) != TF_OK) {
      std::fprintf(stderr, "hvda_emu_tf_gcu: host callback failed: %s\n", TF_Message(status));
    }
    TF_DeleteStatus(status);
    delete cb;
  }
};

TF_Bool HostCallbackFn(const SP_Device* /*device*/, SP_Stream stream,
                       SE_StatusCallbackFn callback_fn, void* callback_arg) {
  auto* cb = new HostCallback{callback_fn, callback_arg};
  if (topsLaunchHostFunc(stream->stream, HostCallback::Run, cb) != 0) {
    topsGetLastError();
    delete cb;
    return 0;
  }
  return 1;
}

}  // namespace

void FillStreamFns(SP_StreamExecutor* se) {
  se->create_stream = CreateStream;
  se->destroy_stream = DestroyStream;
  se->create_stream_dependency = CreateStreamDependency;
  se->get_stream_status = GetStreamStatus;
  se->create_event = CreateEvent;
  se->destroy_event = DestroyEvent;
  se->get_event_status = GetEventStatus;
  se->record_event = RecordEvent;
  se->wait_for_event = WaitForEvent;
  se->memcpy_dtoh = MemcpyDtoH;
  se->memcpy_htod = MemcpyHtoD;
  se->memcpy_dtod = MemcpyDtoD;
  se->sync_memcpy_dtoh = SyncMemcpyDtoH;
  se->sync_memcpy_htod = SyncMemcpyHtoD;
  se->sync_memcpy_dtod = SyncMemcpyDtoD;
  se->block_host_for_event = BlockHostForEvent;
  se->block_host_until_done = BlockHostUntilDone;
  se->synchronize_all_activity = SynchronizeAllActivity;
  se->mem_zero = MemZero;
  se->memset = Memset;
  se->memset32 = Memset32;
  se->host_callback = HostCallbackFn;
}

}  // namespace hvda_tf_gcu

extern "C" void* hvda_tf_gcu_native_stream(SP_Stream stream) {
  return stream == nullptr ? nullptr : stream->stream;
}
