#include "common/plugin/plugin_device.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/plugin/plugin_abi_enums.h"
#include "common/util/settings.h"
#include "kernels/reduce_kernels.h"

namespace hvda {
namespace {

class PluginStream : public Stream {
 public:
  // owned: made by stream_create (else a wrapped framework stream).
  PluginStream(const PluginDeviceOps* ops, hvda_stream_t handle, bool owned)
      : ops_(ops), handle_(handle), owned_(owned) {}
  ~PluginStream() override { ops_->stream_destroy(handle_); }
  hvda_stream_t handle() const { return handle_; }
  bool owned() const { return owned_; }

 private:
  const PluginDeviceOps* ops_;
  hvda_stream_t handle_;
  bool owned_;
};

class PluginEvent : public Event {
 public:
  PluginEvent(const PluginDeviceOps* ops, hvda_event_t handle) : ops_(ops), handle_(handle) {}
  ~PluginEvent() override { ops_->event_destroy(handle_); }
  hvda_event_t handle() const { return handle_; }

 private:
  const PluginDeviceOps* ops_;
  hvda_event_t handle_;
};

hvda_event_t EventHandle(Event* event) { return static_cast<PluginEvent*>(event)->handle(); }

}  // namespace

PluginDevice::PluginDevice(std::shared_ptr<PluginLibrary> lib, int device_index)
    : lib_(std::move(lib)), ops_(&lib_->ops().device), index_(device_index) {}

std::string PluginDevice::name() const {
  return std::string(lib_->plugin().name) + ":" + std::to_string(index_);
}

hvda_stream_t PluginDevice::Handle(Stream* stream) {
  return stream == nullptr ? nullptr : static_cast<PluginStream*>(stream)->handle();
}

Status PluginDevice::Check(hvda_status s, const char* what) const {
  if (s == HVDA_OK) return Status::OK();
  return lib_->Error(s, name() + ": " + what);
}

Status PluginDevice::Allocate(size_t bytes, void** ptr) {
  return Check(ops_->mem_alloc(index_, bytes, ptr), "mem_alloc");
}
void PluginDevice::Free(void* ptr) {
  if (ptr) ops_->mem_free(index_, ptr);
}
Status PluginDevice::AllocateHost(size_t bytes, void** ptr) {
  return Check(ops_->host_alloc(bytes, ptr), "host_alloc");
}
void PluginDevice::FreeHost(void* ptr) {
  if (ptr) ops_->host_free(ptr);
}
Status PluginDevice::CopyAsync(void* dst, const void* src, size_t bytes, Stream* s) {
  if (bytes == 0 || dst == src) return Status::OK();
  return Check(ops_->memcpy_async(dst, src, bytes, HVDA_COPY_DEVICE_TO_DEVICE, Handle(s)),
               "memcpy_async (device to device)");
}
Status PluginDevice::CopyToHostAsync(void* dst, const void* src, size_t bytes, Stream* s) {
  if (bytes == 0) return Status::OK();
  return Check(ops_->memcpy_async(dst, src, bytes, HVDA_COPY_DEVICE_TO_HOST, Handle(s)),
               "memcpy_async (device to host)");
}
Status PluginDevice::CopyFromHostAsync(void* dst, const void* src, size_t bytes, Stream* s) {
  if (bytes == 0) return Status::OK();
  return Check(ops_->memcpy_async(dst, src, bytes, HVDA_COPY_HOST_TO_DEVICE, Handle(s)),
               "memcpy_async (host to device)");
}
Status PluginDevice::MemsetAsync(void* dst, int value, size_t bytes, Stream* s) {
  if (bytes == 0) return Status::OK();
  return Check(ops_->memset_async(dst, value, bytes, Handle(s)), "memset_async");
}

Status PluginDevice::CreateStream(std::unique_ptr<Stream>* stream) {
  hvda_stream_t handle = nullptr;
  HVDA_RETURN_IF_ERROR(Check(ops_->stream_create(index_, &handle), "stream_create"));
  stream->reset(new PluginStream(ops_, handle, true));
  return Status::OK();
}
Status PluginDevice::WrapStream(void* native, std::unique_ptr<Stream>* stream) {
  hvda_stream_t handle = nullptr;
  HVDA_RETURN_IF_ERROR(Check(ops_->stream_wrap(index_, native, &handle), "stream_wrap"));
  stream->reset(new PluginStream(ops_, handle, false));
  return Status::OK();
}
Status PluginDevice::WrapFrameworkStream(const std::string& framework, void* handle,
                                         std::unique_ptr<Stream>* stream) {
  if (ops_->stream_from_framework == nullptr)
    return Status::Unavailable(name() + ": this plugin cannot use " + framework +
                               " streams (it offers no stream_from_framework, plugin ABI 1.2); "
                               "ask its vendor for a build that maps them");
  void* native = nullptr;
  HVDA_RETURN_IF_ERROR(
      Check(ops_->stream_from_framework(index_, framework.c_str(), handle, &native),
            "stream_from_framework"));
  return WrapStream(native, stream);
}
Status PluginDevice::SynchronizeStream(Stream* s) {
  const bool owned = s != nullptr && static_cast<PluginStream*>(s)->owned();
  const double limit = drain_limit();
  bool stuck = false;
  Status st = owned && limit > 0 ? BoundedSynchronize(s, limit, &stuck)
                                 : Check(ops_->stream_synchronize(Handle(s)), "stream_synchronize");
  // kTimeout from a communication stream means "stuck, abandon it" (NOTE
  // [Bounded teardown]); a plugin's own HVDA_TIMEOUT that reached here ended
  // the stream's work, so it is reported as another failure.
  if (owned && !stuck && st.code() == StatusCode::kTimeout) return Status::Unknown(st.reason());
  return st;
}
Status PluginDevice::BoundedSynchronize(Stream* s, double seconds, bool* stuck) {
  std::unique_ptr<Event> ev;
  HVDA_RETURN_IF_ERROR(TakeEvent(&ev));
  Status st = RecordEvent(ev.get(), s);
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(seconds));
  auto pause = std::chrono::microseconds(20);
  while (st.ok()) {
    bool done = false;
    st = QueryEvent(ev.get(), &done);
    if (!st.ok() || done) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      // The event stays with the stuck stream's record: not reused. The
      // stream will be abandoned with its work still queued in the plugin.
      *stuck = true;
      lib_->KeepLoaded();
      return Status::Timeout(name() + ": a communication stream did not drain within " +
                             std::to_string(static_cast<int>(seconds)) + " s (" +
                             setting_env::accel_timeout_seconds +
                             " plus a grace period): its work is stuck; the stream and its "
                             "buffers are abandoned.");
    }
    // Capped low: Adasum and fusion-buffer growth wait here in normal runs.
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(200));
  }
  GiveBackEvent(std::move(ev));
  return st;
}
Status PluginDevice::CreateEvent(std::unique_ptr<Event>* event) {
  hvda_event_t handle = nullptr;
  HVDA_RETURN_IF_ERROR(Check(ops_->event_create(index_, &handle), "event_create"));
  event->reset(new PluginEvent(ops_, handle));
  return Status::OK();
}
Status PluginDevice::TakeEvent(std::unique_ptr<Event>* event) {
  {
    std::lock_guard<std::mutex> lock(spare_mu_);
    if (!spare_events_.empty()) {
      *event = std::move(spare_events_.back());
      spare_events_.pop_back();
      return Status::OK();
    }
  }
  return CreateEvent(event);
}
void PluginDevice::GiveBackEvent(std::unique_ptr<Event> event) {
  // A bound on what an op burst leaves behind; beyond it, destroy.
  constexpr size_t kMaxSpareEvents = 256;
  std::lock_guard<std::mutex> lock(spare_mu_);
  if (spare_events_.size() < kMaxSpareEvents) spare_events_.push_back(std::move(event));
}
Status PluginDevice::RecordEvent(Event* e, Stream* s) {
  return Check(ops_->event_record(EventHandle(e), Handle(s)), "event_record");
}
Status PluginDevice::QueryEvent(Event* e, bool* done) {
  hvda_status st = ops_->event_query(EventHandle(e));
  *done = st == HVDA_OK;
  return st == HVDA_NOT_READY ? Status::OK() : Check(st, "event_query");
}
Status PluginDevice::SynchronizeEvent(Event* e) {
  return Check(ops_->event_synchronize(EventHandle(e)), "event_synchronize");
}
Status PluginDevice::StreamWaitEvent(Stream* s, Event* e) {
  return Check(ops_->stream_wait_event(Handle(s), EventHandle(e)), "stream_wait_event");
}
// The core's host kernels stand in for the scale / reduce_into that a
// plugin with host-accessible memory does not offer: the stream's earlier
// work is awaited, then the kernel runs here; work enqueued later sees the
// result (memory_host_accessible's contract in plugin.h).
Status PluginDevice::Scale(void* buf, int64_t count, DataType dtype, double factor, Stream* s) {
  if (count == 0) return Status::OK();
  if (!HostScale())
    return Check(ops_->scale(buf, count, AbiDataType(dtype), factor, Handle(s)), "scale");
  HVDA_RETURN_IF_ERROR(SynchronizeStream(s));
  kernels::Scale(buf, count, dtype, factor);
  return Status::OK();
}
Status PluginDevice::ReduceInto(void* dst, const void* src, int64_t count, DataType dtype,
                                ReduceOp op, Stream* s) {
  if (count == 0) return Status::OK();
  if (!HostReduce())
    return Check(
        ops_->reduce_into(dst, src, count, AbiDataType(dtype), AbiReduceOp(op), Handle(s)),
        "reduce_into");
  if (!kernels::IsReducible(dtype, op))
    return Status::InvalidArgument(name() + ": the core's host kernels have no " +
                                   ReduceOpName(op) + " of " + DataTypeName(dtype));
  HVDA_RETURN_IF_ERROR(SynchronizeStream(s));
  kernels::Reduce2(dst, dst, src, count, dtype, op);
  return Status::OK();
}
bool PluginDevice::SupportsHostFunc() const { return ops_->launch_host_func != nullptr; }
Status PluginDevice::LaunchHostFunc(Stream* s, void (*fn)(void*), void* arg) {
  if (!SupportsHostFunc()) return DeviceExecution::LaunchHostFunc(s, fn, arg);
  return Check(ops_->launch_host_func(Handle(s), fn, arg), "launch_host_func");
}
Status PluginDevice::BatchedCopy(const std::vector<CopyDesc>& copies, Stream* s) {
  if (copies.empty()) return Status::OK();
  std::vector<hvda_copy_desc> descs(copies.size());
  for (size_t i = 0; i < copies.size(); ++i)
    descs[i] = {copies[i].dst, copies[i].src, copies[i].bytes};
  return Check(ops_->batched_copy(descs.data(), descs.size(), Handle(s)), "batched_copy");
}

}  // namespace hvda
