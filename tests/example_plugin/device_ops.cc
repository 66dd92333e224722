// hvda_device_ops_v1 of the example device: memory is ordinary host memory,
// streams are host threads (streams.h), kernels are host loops (kernels.h).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels.h"
#include "plugin_state.h"
#include "streams.h"
#include "tables.h"

namespace example {

namespace {

thread_local int t_current_device = 0;  // set_device; nothing else needs it

constexpr size_t kAlignment = 64;  // a cache line; fine for any dtype

hvda_status BadArgument(const char* function, const char* what) {
  return Fail(HVDA_INVALID_ARGUMENT, std::string("example device: ") + function + ": " + what);
}

// ---------------------------------------------------------------- memory

// 64-byte aligned host memory; 0 bytes still gives a unique, freeable
// pointer (plugin.h). Freed with std::free by mem_free / host_free.
hvda_status AlignedAlloc(size_t bytes, void** ptr) {
  if (ptr == nullptr) return BadArgument("alloc", "ptr is NULL");
  const size_t want = bytes == 0 ? 1 : bytes;
  if (want > SIZE_MAX - kAlignment) *ptr = nullptr;
  else *ptr = std::aligned_alloc(kAlignment, (want + kAlignment - 1) / kAlignment * kAlignment);
  if (*ptr == nullptr)
    return Fail(HVDA_OUT_OF_MEMORY, "example device: cannot allocate " + std::to_string(bytes) +
                                        " bytes (host memory): free memory, or lower the "
                                        "fusion buffer (HOROVOD_FUSION_THRESHOLD)");
  return HVDA_OK;
}

hvda_status DeviceCount(int* count) {
  PluginState* state = nullptr;
  if (hvda_status s = RequireState(&state)) return s;
  if (count == nullptr) return BadArgument("device_count", "count is NULL");
  *count = state->settings().device_count;
  return HVDA_OK;
}

hvda_status SetDevice(int device) {
  if (hvda_status s = CheckDevice(device)) return s;
  t_current_device = device;
  return HVDA_OK;
}

hvda_status MemAlloc(int device, size_t bytes, void** ptr) {
  if (hvda_status s = CheckDevice(device)) return s;
  return AlignedAlloc(bytes, ptr);
}

hvda_status MemFree(int, void* ptr) {
  std::free(ptr);  // the core frees only memory no enqueued work still uses
  return HVDA_OK;
}

hvda_status HostAlloc(size_t bytes, void** ptr) { return AlignedAlloc(bytes, ptr); }

hvda_status HostFree(void* ptr) {
  std::free(ptr);
  return HVDA_OK;
}

// ---------------------------------------------------------------- copies

hvda_status MemcpyAsync(void* dst, const void* src, size_t bytes, hvda_memcpy_kind,
                        hvda_stream_t stream) {
  if (stream == nullptr) return BadArgument("memcpy_async", "stream is NULL");
  return Guarded("memcpy_async", [&] {
    ToStream(stream)->Enqueue([=] {
      if (bytes > 0) std::memcpy(dst, src, bytes);  // every kind is host to host here
      return HVDA_OK;
    });
    return HVDA_OK;
  });
}

hvda_status MemsetAsync(void* dst, int value, size_t bytes, hvda_stream_t stream) {
  if (stream == nullptr) return BadArgument("memset_async", "stream is NULL");
  return Guarded("memset_async", [&] {
    ToStream(stream)->Enqueue([=] {
      if (bytes > 0) std::memset(dst, value, bytes);
      return HVDA_OK;
    });
    return HVDA_OK;
  });
}

hvda_status BatchedCopy(const hvda_copy_desc* copies, size_t n, hvda_stream_t stream) {
  if (stream == nullptr || (copies == nullptr && n > 0))
    return BadArgument("batched_copy", "stream or copies is NULL");
  return Guarded("batched_copy", [&] {
    // The descriptors are the caller's only during this call: keep a copy.
    std::vector<hvda_copy_desc> list(copies, copies + n);
    ToStream(stream)->Enqueue([list = std::move(list)] {
      for (const hvda_copy_desc& c : list)
        if (c.bytes > 0) std::memcpy(c.dst, c.src, c.bytes);
      return HVDA_OK;
    });
    return HVDA_OK;
  });
}

// ---------------------------------------------------------------- streams, events

hvda_status StreamCreate(int device, hvda_stream_t* stream) {
  if (hvda_status s = CheckDevice(device)) return s;
  if (stream == nullptr) return BadArgument("stream_create", "stream is NULL");
  return Guarded("stream_create", [&] {
    *stream = ToHandle(new Stream(Stream::Kind::kWorker));
    return HVDA_OK;
  });
}

// NULL is the device's default stream. The device has no native streams, so
// that is all a wrapper can be: a new immediate stream (streams.h), which
// the core destroys like any other without affecting other wrappers.
hvda_status StreamWrap(int device, void* native, hvda_stream_t* stream) {
  if (hvda_status s = CheckDevice(device)) return s;
  if (stream == nullptr) return BadArgument("stream_wrap", "stream is NULL");
  if (native != nullptr)
    return BadArgument("stream_wrap",
                       "the example device has no native streams, so there is nothing to wrap: "
                       "pass NULL (the default stream, whose work runs at once)");
  return Guarded("stream_wrap", [&] {
    *stream = ToHandle(new Stream(Stream::Kind::kImmediate));
    return HVDA_OK;
  });
}

hvda_status StreamDestroy(hvda_stream_t stream) {
  delete ToStream(stream);  // runs what is queued (bounded), joins the worker
  return HVDA_OK;
}

hvda_status StreamSynchronize(hvda_stream_t stream) {
  if (stream == nullptr) return BadArgument("stream_synchronize", "stream is NULL");
  return ToStream(stream)->Synchronize();
}

hvda_status StreamWaitEvent(hvda_stream_t stream, hvda_event_t event) {
  if (stream == nullptr || event == nullptr)
    return BadArgument("stream_wait_event", "stream or event is NULL");
  return Guarded("stream_wait_event", [&] {
    ToStream(stream)->WaitFor(ToEvent(event)->marks);  // a copy: the event may be re-recorded
    return HVDA_OK;
  });
}

hvda_status EventCreate(int device, hvda_event_t* event) {
  if (hvda_status s = CheckDevice(device)) return s;
  if (event == nullptr) return BadArgument("event_create", "event is NULL");
  return Guarded("event_create", [&] {
    *event = ToHandle(new Event());
    return HVDA_OK;
  });
}

hvda_status EventDestroy(hvda_event_t event) {
  delete ToEvent(event);
  return HVDA_OK;
}

hvda_status EventRecord(hvda_event_t event, hvda_stream_t stream) {
  if (stream == nullptr || event == nullptr)
    return BadArgument("event_record", "stream or event is NULL");
  return Guarded("event_record", [&] {
    ToEvent(event)->marks = ToStream(stream)->Record();
    return HVDA_OK;
  });
}

hvda_status EventQuery(hvda_event_t event) {
  if (event == nullptr) return BadArgument("event_query", "event is NULL");
  return QueryMarks(ToEvent(event)->marks);
}

hvda_status EventSynchronize(hvda_event_t event) {
  if (event == nullptr) return BadArgument("event_synchronize", "event is NULL");
  return WaitMarks(ToEvent(event)->marks);
}

// Runs fn(arg) on the stream's thread after the work before it, even when
// that work failed (the core's completion callback must fire; it then
// reads the failure from its event).
hvda_status LaunchHostFunc(hvda_stream_t stream, void (*fn)(void*), void* arg) {
  if (stream == nullptr || fn == nullptr)
    return BadArgument("launch_host_func", "stream or fn is NULL");
  return Guarded("launch_host_func", [&] {
    ToStream(stream)->Enqueue([fn, arg] { fn(arg); return HVDA_OK; }, /*even_after_error=*/true);
    return HVDA_OK;
  });
}

// ---------------------------------------------------------------- kernels (ABI 1.0 only)

#if HVDA_PLUGIN_ABI_MINOR < 1
hvda_status ScaleKernel(void* buf, int64_t count, hvda_dtype dtype, double factor,
                        hvda_stream_t stream) {
  if (stream == nullptr || count < 0) return BadArgument("scale", "NULL stream or count < 0");
  if (ElementSize(dtype) == 0)
    return Fail(HVDA_UNSUPPORTED, "example device: scale: unknown dtype " + std::to_string(dtype));
  return Guarded("scale", [&] {
    ToStream(stream)->Enqueue([=] {
      Scale(buf, static_cast<size_t>(count), dtype, factor);
      return HVDA_OK;
    });
    return HVDA_OK;
  });
}

hvda_status ReduceIntoKernel(void* dst, const void* src, int64_t count, hvda_dtype dtype,
                             hvda_reduce_op op, hvda_stream_t stream) {
  if (stream == nullptr || count < 0) return BadArgument("reduce_into", "NULL stream or count < 0");
  if (!CanReduce(dtype, op))
    return Fail(HVDA_UNSUPPORTED, "example device: reduce_into: dtype " + std::to_string(dtype) +
                                      " with op " + std::to_string(op) + " is not offered");
  return Guarded("reduce_into", [&] {
    ToStream(stream)->Enqueue([=] {
      Reduce(dst, src, static_cast<size_t>(count), dtype, op);
      return HVDA_OK;
    });
    return HVDA_OK;
  });
}
#endif

}  // namespace

void FillDeviceOps(hvda_device_ops_v1* ops) {
  ops->struct_size = sizeof(hvda_device_ops_v1);
  ops->device_count = DeviceCount;
  ops->set_device = SetDevice;
  ops->mem_alloc = MemAlloc;
  ops->mem_free = MemFree;
  ops->host_alloc = HostAlloc;
  ops->host_free = HostFree;
  ops->memcpy_async = MemcpyAsync;
  ops->memset_async = MemsetAsync;
  ops->stream_create = StreamCreate;
  ops->stream_wrap = StreamWrap;
  ops->stream_destroy = StreamDestroy;
  ops->stream_synchronize = StreamSynchronize;
  ops->stream_wait_event = StreamWaitEvent;
  ops->event_create = EventCreate;
  ops->event_destroy = EventDestroy;
  ops->event_record = EventRecord;
  ops->event_query = EventQuery;
  ops->event_synchronize = EventSynchronize;
  ops->batched_copy = BatchedCopy;
  ops->launch_host_func = LaunchHostFunc;
#if HVDA_PLUGIN_ABI_MINOR >= 1
  // What ABI 1.1 buys a vendor whose device memory is host memory: say so,
  // and leave scale and reduce_into NULL. The core then synchronizes the
  // stream and runs its own host kernels (every dtype and op of its CPU
  // path) on that memory; this plugin needs no kernels of its own for the
  // core (kernels.cc serves only its collective library).
  ops->memory_host_accessible = 1;
  ops->scale = nullptr;
  ops->reduce_into = nullptr;
#else
  // A 1.0 core cannot be told that memory is host memory: it needs the
  // kernels, enqueued on the stream like any device work.
  ops->scale = ScaleKernel;
  ops->reduce_into = ReduceIntoKernel;
#endif
}

}  // namespace example
