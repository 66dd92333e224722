// PluginDevice: the core's Device (memory + execution, csrc/common/hal/
// device.h) over a loaded device plugin, through the device part of the
// plugin's PluginOps (plugin_ops.h). Its collectives are PluginBackend's
// (plugin_backend.h).
//
// Lifetime: shares ownership of the PluginLibrary, so the library stays
// loaded while the device (or a backend made with it) lives. Streams and
// events it creates belong to the plugin and are destroyed through it.
// Threading: as the HAL (the runtime's background thread), except where a
// method says otherwise.
//
// Versions: none here. What a plugin's ABI version lacks is a fallback or a
// "not offered" entry of PluginOps, filled at load (NOTE [One table per
// plugin]); this file only asks whether an entry is there.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/hal/device.h"
#include "common/hal/registry.h"
#include "common/plugin/plugin_library.h"
#include "common/plugin/plugin_ops.h"

namespace hvda {

// How long past HOROVOD_ACCEL_TIMEOUT_SECONDS the core waits for a stuck
// communication stream at teardown before leaking it (plugin.h, "timeouts").
constexpr double kTeardownGraceSeconds = 5.0;

class PluginDevice : public Device, private DeviceMemory, private DeviceExecution {
 public:
  // device_index: the framework's index of the device this rank uses.
  PluginDevice(std::shared_ptr<PluginLibrary> lib, int device_index);

  DeviceKind kind() const override { return DeviceKind::kPlugin; }
  std::string name() const override;
  DeviceMemory& memory() override { return *this; }
  DeviceExecution& execution() override { return *this; }
  int index() const { return index_; }
  const PluginLibrary& library() const { return *lib_; }
  std::shared_ptr<PluginLibrary> library_ptr() const { return lib_; }
  // The plugin's handle of a stream made by this device.
  static hvda_stream_t Handle(Stream* stream);

  // Events reused across ops (the "input ready" event each enqueue records
  // on the framework's stream): a native event create + destroy per op costs
  // microseconds on real runtimes. Thread-safe (framework threads take, the
  // background thread gives back). An event given back may be recorded
  // again at once: waits already enqueued on it keep the record they saw
  // (stream_wait_event's contract in plugin.h, as on the vendor runtimes). The
  // Executor keeps its own unsynchronized spares for completion events, on
  // the background thread only.
  Status TakeEvent(std::unique_ptr<Event>* event);
  void GiveBackEvent(std::unique_ptr<Event> event);

  // NOTE [Bounded teardown]: with a limit > 0, SynchronizeStream of a stream
  // this device created (a communication stream, not a wrapped framework
  // stream) polls an event for at most `seconds` and then fails with
  // kTimeout: the stream's work is stuck (a lost peer in a library without
  // a true abort), and the Executor then leaks the stream and what it uses
  // instead of waiting or freeing memory in use. Set by PluginBackend::Create
  // (plugin_backend.h) to HOROVOD_ACCEL_TIMEOUT_SECONDS +
  // kTeardownGraceSeconds; 0 (the default, and with no timeout) waits in
  // stream_synchronize as long as it takes. Thread-safe.
  void SetDrainLimit(double seconds) { drain_limit_seconds_.store(seconds); }
  double drain_limit() const { return drain_limit_seconds_.load(); }
  // Whether the core runs scale / reduce_into with its host kernels: the
  // plugin does not offer them (PluginDeviceOps; the loader allows that only
  // with memory_host_accessible: MissingRequiredEntries).
  bool HostScale() const { return ops_->scale == nullptr; }
  bool HostReduce() const { return ops_->reduce_into == nullptr; }
  // Wraps a framework's own stream object (kind `framework`, e.g.
  // "tensorflow": a PluggableDevice SP_Stream) through the plugin's
  // stream_from_framework (ABI 1.2). Unavailable, saying why, when the
  // plugin offers no mapping or cannot map that kind.
  Status WrapFrameworkStream(const std::string& framework, void* handle,
                             std::unique_ptr<Stream>* stream);

 private:
  Status Check(hvda_status s, const char* what) const;
  // Polls an event recorded on stream for at most `seconds`; *stuck when
  // that ran out (then kTimeout).
  Status BoundedSynchronize(Stream* stream, double seconds, bool* stuck);

  // DeviceMemory
  Status Allocate(size_t bytes, void** ptr) override;
  void Free(void* ptr) override;
  Status AllocateHost(size_t bytes, void** ptr) override;
  void FreeHost(void* ptr) override;
  Status CopyAsync(void* dst, const void* src, size_t bytes, Stream* stream) override;
  Status CopyToHostAsync(void* dst, const void* src, size_t bytes, Stream* stream) override;
  Status CopyFromHostAsync(void* dst, const void* src, size_t bytes, Stream* stream) override;
  Status MemsetAsync(void* dst, int value, size_t bytes, Stream* stream) override;

  // DeviceExecution
  Status CreateStream(std::unique_ptr<Stream>* stream) override;
  Status WrapStream(void* native, std::unique_ptr<Stream>* stream) override;
  Status SynchronizeStream(Stream* stream) override;
  Status CreateEvent(std::unique_ptr<Event>* event) override;
  Status RecordEvent(Event* event, Stream* stream) override;
  Status QueryEvent(Event* event, bool* done) override;
  Status SynchronizeEvent(Event* event) override;
  Status StreamWaitEvent(Stream* stream, Event* event) override;
  Status Scale(void* buf, int64_t count, DataType dtype, double factor, Stream* stream) override;
  Status ReduceInto(void* dst, const void* src, int64_t count, DataType dtype, ReduceOp op,
                    Stream* stream) override;
  Status BatchedCopy(const std::vector<CopyDesc>& copies, Stream* stream) override;
  bool SupportsHostFunc() const override;
  Status LaunchHostFunc(Stream* stream, void (*fn)(void*), void* arg) override;

  std::shared_ptr<PluginLibrary> lib_;
  const PluginDeviceOps* ops_;  // lib_'s table
  int index_;
  std::atomic<double> drain_limit_seconds_{0.0};
  // After lib_: destroyed (through the plugin) while the library is loaded.
  std::mutex spare_mu_;
  std::vector<std::unique_ptr<Event>> spare_events_;  // at most kMaxSpareEvents
};

// Registers the accelerator kind (DeviceKind::kPlugin): every device plugin,
// whatever its vendor, is one device kind whose backend ("plugin") maps the
// plugin's collective library (PluginBackend). Its `create` needs
// spec.device to be a PluginDevice (the Accelerators' bound device). The
// Runtime calls it itself: the plugin ABI is part of the core. Defined in
// plugin_backend.cc, beside the backend it registers.
void RegisterPluginDevice(Registry* registry);

}  // namespace hvda
