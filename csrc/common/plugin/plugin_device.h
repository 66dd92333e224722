// The C++ HAL over a loaded device plugin (plugin.h): PluginDevice maps
// hvda_device_ops_v1 onto Device (memory + execution), PluginBackend maps
// hvda_ccl_ops_v1 onto CollectiveBackend and composes what the library does
// not offer (uneven allgather / reduce-scatter, alltoallv, barrier).
//
// Lifetime: both share ownership of the PluginLibrary, so the library stays
// loaded while any object made from it lives. Streams and events they create
// belong to the plugin and are destroyed through it.
// Threading: as the HAL (the runtime's background thread).
//
// ABI 1.1 additions are used only when the plugin's abi_minor is >= 1 and
// its table covers them (PluginAbiAtLeast + HVDA_HAS_FIELD): a 1.0 plugin's
// tables are never read past their struct_size.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/hal/collective_backend.h"
#include "common/hal/device.h"
#include "common/hal/registry.h"
#include "common/plugin/plugin_library.h"

namespace hvda {

// Whether the plugin was built against ABI 1.minor or later.
bool PluginAbiAtLeast(const PluginLibrary& lib, uint32_t minor);

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
  // to HOROVOD_ACCEL_TIMEOUT_SECONDS + kTeardownGraceSeconds; 0 (the
  // default, and with no timeout) waits in stream_synchronize as long as it
  // takes. Thread-safe.
  void SetDrainLimit(double seconds) { drain_limit_seconds_.store(seconds); }
  double drain_limit() const { return drain_limit_seconds_.load(); }
  // Whether the core runs scale / reduce_into with its host kernels (ABI
  // 1.1: memory_host_accessible set and the plugin's own left NULL).
  bool HostScale() const { return host_scale_; }
  bool HostReduce() const { return host_reduce_; }

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
  const hvda_device_ops_v1* ops_;
  int index_;
  bool host_scale_ = false, host_reduce_ = false;
  std::atomic<double> drain_limit_seconds_{0.0};
  // After lib_: destroyed (through the plugin) while the library is loaded.
  std::mutex spare_mu_;
  std::vector<std::unique_ptr<Event>> spare_events_;  // at most kMaxSpareEvents
};

class PluginBackend : public CollectiveBackend {
 public:
  // Collective over spec's ranks: set rank 0 makes the unique id and
  // publishes it in spec.store under spec.prefix; every rank then joins the
  // communicator (blocks up to spec.timeout_seconds), with
  // comm_init_rank_config where the plugin has it (ABI 1.1: the operation
  // timeout, HOROVOD_ACCEL_TIMEOUT_SECONDS from spec.config; 0 without a
  // config), and rank 0 then releases the id (unique_id_release, ABI 1.1)
  // whatever the outcome. device: borrowed, outlives the backend (scratch
  // memory for composed collectives); its drain limit is set (NOTE [Bounded
  // teardown]).
  static Status Create(std::shared_ptr<PluginLibrary> lib, PluginDevice* device,
                       const CommunicatorSpec& spec, std::unique_ptr<CollectiveBackend>* out);
  ~PluginBackend() override;

  const char* name() const override { return name_.c_str(); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool Supports(CollectiveKind kind, DataType dtype, ReduceOp op) const override;

  Status Allreduce(void* buffer, int64_t count, DataType dtype, ReduceOp op,
                   Stream* stream) override;
  Status Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes_per_rank,
                    Stream* stream) override;
  Status Broadcast(void* buffer, int64_t bytes, int root, Stream* stream) override;
  Status Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                   const std::vector<int64_t>& recv_bytes, Stream* stream) override;
  Status Reducescatter(const void* in, void* out, const std::vector<int64_t>& counts_per_rank,
                       DataType dtype, ReduceOp op, Stream* stream) override;
  Status Barrier(Stream* stream) override;

  Status AsyncError() const override;
  void Abort() override;

 private:
  PluginBackend(std::shared_ptr<PluginLibrary> lib, PluginDevice* device, hvda_comm_t comm,
                int rank, int size);
  Status Check(hvda_status s, const char* what) const;
  // A device buffer of >= bytes, reused in the order of stream s.
  Status Scratch(size_t bytes, Stream* s, void** ptr);

  std::shared_ptr<PluginLibrary> lib_;
  const hvda_ccl_ops_v1* ccl_;
  PluginDevice* device_;
  hvda_comm_t comm_;
  int rank_, size_;
  std::string name_;
  void* scratch_ = nullptr;  // device memory for composed collectives
  size_t scratch_bytes_ = 0;
};

// Registers the accelerator kind (DeviceKind::kPlugin): every device plugin,
// whatever its vendor, is one device kind whose backend ("plugin") maps the
// plugin's collective library (PluginBackend). Its `create` needs
// spec.device to be a PluginDevice (the Accelerators' bound device). The
// Runtime calls it itself: the plugin ABI is part of the core.
void RegisterPluginDevice(Registry* registry);

}  // namespace hvda
