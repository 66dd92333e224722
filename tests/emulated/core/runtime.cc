// The emulated runtime calls (emu_core.h): devices, memory, copies, streams,
// events and host functions over the process-wide runtime state.
#include "runtime.h"

#include <cstring>
#include <unordered_map>
#include <vector>

#include "config.h"
#include "copy_counts.h"

namespace hvda_emu {
namespace {

thread_local int current_device = 0;

// The process-wide runtime state. Handles are the addresses of the Stream /
// Event objects; the tables make a stale or foreign handle an error instead
// of a crash.
class Runtime {
 public:
  // Never destroyed: stream workers may still run during static destruction.
  static Runtime& Get() {
    static Runtime* runtime = new Runtime();
    return *runtime;
  }

  DeviceMemory memory;
  PinnedHostMemory pinned;

  std::shared_ptr<Stream> DefaultStream(int device) {
    std::lock_guard<std::mutex> lock(mu_);
    std::shared_ptr<Stream>& s = default_streams_[static_cast<size_t>(device)];
    if (s == nullptr) s = std::make_shared<Stream>(device, GetConfig().stream_delay_us);
    return s;
  }

  std::shared_ptr<Stream> FindStream(StreamHandle h) {
    if (h == nullptr) return DefaultStream(current_device);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = streams_.find(h);
    return it == streams_.end() ? nullptr : it->second;
  }

  StreamHandle AddStream(int device) {
    auto s = std::make_shared<Stream>(device, GetConfig().stream_delay_us);
    std::lock_guard<std::mutex> lock(mu_);
    streams_.emplace(s.get(), s);
    return s.get();
  }

  std::shared_ptr<Stream> TakeStream(StreamHandle h) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = streams_.find(h);
    if (it == streams_.end()) return nullptr;
    std::shared_ptr<Stream> s = std::move(it->second);
    streams_.erase(it);
    return s;
  }

  std::shared_ptr<Event> FindEvent(EventHandle h) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = events_.find(h);
    return it == events_.end() ? nullptr : it->second;
  }

  EventHandle AddEvent() {
    auto e = std::make_shared<Event>();
    std::lock_guard<std::mutex> lock(mu_);
    events_.emplace(e.get(), e);
    return e.get();
  }

  bool RemoveEvent(EventHandle h) {
    std::lock_guard<std::mutex> lock(mu_);
    return events_.erase(h) == 1;
  }

 private:
  Runtime() : default_streams_(static_cast<size_t>(GetConfig().device_count)) {}

  std::mutex mu_;
  std::vector<std::shared_ptr<Stream>> default_streams_;  // by device, made on first use
  std::unordered_map<void*, std::shared_ptr<Stream>> streams_;
  std::unordered_map<void*, std::shared_ptr<Event>> events_;
};

// One side of a copy: device memory (resolved to its shadow, kept mapped by
// *keep) or host memory (used as is). False when p is not that kind of
// memory for n bytes.
bool CopySide(const void* p, size_t n, bool device, DeviceSpan* keep, const char** addr) {
  if (device) {
    if (!Runtime::Get().memory.Resolve(p, n, keep)) return false;
    *addr = keep->shadow;
    return true;
  }
  *addr = static_cast<const char*>(p);
  return Runtime::Get().memory.IsHost(p, n);
}

// Validates a copy and enqueues it on s; *position is its stream position.
int EnqueueCopy(void* dst, const void* src, size_t n, int kind, Stream& s, uint64_t* position) {
  if (kind < kHostToHost || kind > kDeviceToDevice) return kRtInvalidValue;
  const bool dst_device = kind == kHostToDevice || kind == kDeviceToDevice;
  const bool src_device = kind == kDeviceToHost || kind == kDeviceToDevice;
  DeviceSpan dst_keep, src_keep;
  const char* d = nullptr;
  const char* from = nullptr;
  if (n > 0 && (!CopySide(dst, n, dst_device, &dst_keep, &d) ||
                !CopySide(src, n, src_device, &src_keep, &from))) {
    return kRtInvalidValue;
  }
  char* to = const_cast<char*>(d);
  *position = s.Enqueue([to, from, n, dst_keep, src_keep] {
    if (n > 0) std::memmove(to, from, n);
  });
  CountCopy(kind, n);
  return kRtSuccess;
}

}  // namespace

const DeviceMemory& ProcessDeviceMemory() { return Runtime::Get().memory; }

std::shared_ptr<Stream> ResolveStream(StreamHandle handle) {
  return Runtime::Get().FindStream(handle);
}

int RtGetDeviceCount(int* count) {
  if (count == nullptr) return kRtInvalidValue;
  *count = GetConfig().device_count;
  return kRtSuccess;
}

int RtSetDevice(int device) {
  if (device < 0 || device >= GetConfig().device_count) return kRtInvalidValue;
  current_device = device;
  return kRtSuccess;
}

int RtGetDevice(int* device) {
  if (device == nullptr) return kRtInvalidValue;
  *device = current_device;
  return kRtSuccess;
}

int RtMalloc(void** p, size_t n) { return Runtime::Get().memory.Allocate(n, p); }
int RtFree(void* p) { return Runtime::Get().memory.Free(p); }
int RtHostAlloc(void** p, size_t n) { return Runtime::Get().pinned.Allocate(n, p); }
int RtHostFree(void* p) { return Runtime::Get().pinned.Free(p); }

int RtMemcpy(void* dst, const void* src, size_t n, int kind) {
  std::shared_ptr<Stream> s = Runtime::Get().DefaultStream(current_device);
  uint64_t position = 0;
  int rc = EnqueueCopy(dst, src, n, kind, *s, &position);
  if (rc == kRtSuccess) s->WaitFor(position);
  return rc;
}

int RtMemcpyAsync(void* dst, const void* src, size_t n, int kind, StreamHandle stream) {
  std::shared_ptr<Stream> s = ResolveStream(stream);
  if (s == nullptr) return kRtInvalidValue;
  uint64_t position = 0;
  return EnqueueCopy(dst, src, n, kind, *s, &position);
}

int RtMemsetAsync(void* p, int value, size_t n, StreamHandle stream) {
  std::shared_ptr<Stream> s = ResolveStream(stream);
  if (s == nullptr) return kRtInvalidValue;
  DeviceSpan keep;
  if (n > 0 && !Runtime::Get().memory.Resolve(p, n, &keep)) return kRtInvalidValue;
  s->Enqueue([keep, value, n] {
    if (n > 0) std::memset(keep.shadow, value, n);
  });
  return kRtSuccess;
}

int RtStreamCreate(StreamHandle* s, unsigned flags) {
  if (s == nullptr || flags > 1) return kRtInvalidValue;  // 0 default, 1 non-blocking
  *s = Runtime::Get().AddStream(current_device);
  return kRtSuccess;
}

int RtStreamDestroy(StreamHandle stream) {
  if (stream == nullptr) return kRtInvalidValue;  // a default stream is not destroyed
  std::shared_ptr<Stream> s = Runtime::Get().TakeStream(stream);
  if (s == nullptr) return kRtInvalidValue;
  s->Shutdown();  // drains: pending work runs first
  return kRtSuccess;
}

int RtStreamSynchronize(StreamHandle stream) {
  std::shared_ptr<Stream> s = ResolveStream(stream);
  if (s == nullptr) return kRtInvalidValue;
  s->Synchronize();
  return kRtSuccess;
}

int RtStreamWaitEvent(StreamHandle stream, EventHandle event, unsigned flags) {
  std::shared_ptr<Stream> s = ResolveStream(stream);
  std::shared_ptr<Event> e = Runtime::Get().FindEvent(event);
  if (s == nullptr || e == nullptr || flags != 0) return kRtInvalidValue;
  std::shared_ptr<Stream> source;
  uint64_t position = 0;
  e->Captured(&source, &position);  // the wait is for the record made before this call
  if (source == nullptr || source == s) return kRtSuccess;
  s->Enqueue([source, position] { source->WaitFor(position); });
  return kRtSuccess;
}

int RtEventCreate(EventHandle* e, unsigned flags) {
  // 1 blocking sync, 2 disable timing (timing is never recorded anyway).
  if (e == nullptr || flags > 3) return kRtInvalidValue;
  *e = Runtime::Get().AddEvent();
  return kRtSuccess;
}

int RtEventDestroy(EventHandle e) {
  return Runtime::Get().RemoveEvent(e) ? kRtSuccess : kRtInvalidValue;
}

int RtEventQuery(EventHandle event) {
  std::shared_ptr<Event> e = Runtime::Get().FindEvent(event);
  if (e == nullptr) return kRtInvalidValue;
  return e->Complete() ? kRtSuccess : kRtNotReady;
}

int RtEventSynchronize(EventHandle event) {
  std::shared_ptr<Event> e = Runtime::Get().FindEvent(event);
  if (e == nullptr) return kRtInvalidValue;
  e->Synchronize();
  return kRtSuccess;
}

int RtEventRecord(EventHandle event, StreamHandle stream) {
  std::shared_ptr<Event> e = Runtime::Get().FindEvent(event);
  std::shared_ptr<Stream> s = ResolveStream(stream);
  if (e == nullptr || s == nullptr) return kRtInvalidValue;
  e->Record(std::move(s));
  return kRtSuccess;
}

int RtLaunchHostFunc(StreamHandle stream, HostFn fn, void* arg) {
  std::shared_ptr<Stream> s = ResolveStream(stream);
  if (s == nullptr || fn == nullptr) return kRtInvalidValue;
  s->Enqueue([fn, arg] { fn(arg); });
  return kRtSuccess;
}

int RtLaunchKernel(StreamHandle stream, KernelFn fn, void* arg, const void* const* device_ptrs,
                   const size_t* sizes, int n) {
  std::shared_ptr<Stream> s = ResolveStream(stream);
  if (s == nullptr || fn == nullptr || n < 0) return kRtInvalidValue;
  if (n > 0 && (device_ptrs == nullptr || sizes == nullptr)) return kRtInvalidValue;
  // keep[i] holds range i mapped until the operation is destroyed (after fn
  // returned: Stream::Run drops it before reporting the position reached).
  std::vector<DeviceSpan> keep(static_cast<size_t>(n));
  std::vector<char*> shadows(static_cast<size_t>(n), nullptr);
  for (size_t i = 0; i < keep.size(); ++i) {
    if (sizes[i] == 0) continue;
    if (!Runtime::Get().memory.Resolve(device_ptrs[i], sizes[i], &keep[i])) return kRtInvalidValue;
    shadows[i] = keep[i].shadow;
  }
  s->Enqueue([fn, arg, keep = std::move(keep), shadows = std::move(shadows)] {
    fn(arg, shadows.data());
  });
  return kRtSuccess;
}

}  // namespace hvda_emu
