#include "common/plugin/plugin_device.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <numeric>
#include <thread>

#include "common/store/store.h"
#include "common/job_spec.h"
#include "kernels/reduce_kernels.h"

namespace hvda {
namespace {

class PluginStream : public Stream {
 public:
  // owned: made by stream_create (else a wrapped framework stream).
  PluginStream(const hvda_device_ops_v1* ops, hvda_stream_t h, bool owned)
      : ops_(ops), h_(h), owned_(owned) {}
  ~PluginStream() override { ops_->stream_destroy(h_); }
  hvda_stream_t handle() const { return h_; }
  bool owned() const { return owned_; }

 private:
  const hvda_device_ops_v1* ops_;
  hvda_stream_t h_;
  bool owned_;
};

class PluginEvent : public Event {
 public:
  PluginEvent(const hvda_device_ops_v1* ops, hvda_event_t h) : ops_(ops), h_(h) {}
  ~PluginEvent() override { ops_->event_destroy(h_); }
  hvda_event_t handle() const { return h_; }

 private:
  const hvda_device_ops_v1* ops_;
  hvda_event_t h_;
};

hvda_event_t EventHandle(Event* e) { return static_cast<PluginEvent*>(e)->handle(); }

// D and R pass the core's enums to the plugin by value: the numbering of
// plugin.h (a frozen ABI) and of dtype.h must agree entry by entry.
constexpr int32_t kAbiDataTypes[] = {HVDA_UINT8,    HVDA_INT8,    HVDA_INT16,   HVDA_INT32,
                                     HVDA_INT64,    HVDA_FLOAT16, HVDA_BFLOAT16, HVDA_FLOAT32,
                                     HVDA_FLOAT64,  HVDA_BOOL,    HVDA_UINT16};
constexpr DataType kCoreDataTypes[] = {
    DataType::kUInt8,   DataType::kInt8,    DataType::kInt16,    DataType::kInt32,
    DataType::kInt64,   DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
    DataType::kFloat64, DataType::kBool,    DataType::kUInt16};
constexpr int32_t kAbiReduceOps[] = {HVDA_AVERAGE, HVDA_SUM, HVDA_ADASUM,
                                     HVDA_MIN,     HVDA_MAX, HVDA_PRODUCT};
constexpr ReduceOp kCoreReduceOps[] = {ReduceOp::kAverage, ReduceOp::kSum, ReduceOp::kAdasum,
                                       ReduceOp::kMin,     ReduceOp::kMax, ReduceOp::kProduct};
template <typename Core, size_t N>
constexpr bool SameNumbering(const int32_t (&abi)[N], const Core (&core)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (abi[i] != static_cast<int32_t>(core[i])) return false;
  return true;
}
static_assert(std::size(kCoreDataTypes) == kNumDataTypes,
              "a new DataType needs its hvda_dtype in plugin.h and an entry here");
static_assert(SameNumbering(kAbiDataTypes, kCoreDataTypes), "plugin.h dtype numbering");
static_assert(SameNumbering(kAbiReduceOps, kCoreReduceOps), "plugin.h reduce-op numbering");

hvda_dtype D(DataType t) { return static_cast<hvda_dtype>(static_cast<int32_t>(t)); }
hvda_reduce_op R(ReduceOp op) { return static_cast<hvda_reduce_op>(static_cast<int32_t>(op)); }

bool AllEqual(const std::vector<int64_t>& v) {
  return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<int64_t>()) == v.end();
}

}  // namespace

bool PluginAbiAtLeast(const PluginLibrary& lib, uint32_t minor) {
  return lib.plugin().abi_major == HVDA_PLUGIN_ABI_MAJOR && lib.plugin().abi_minor >= minor;
}

// ---------------------------------------------------------------- PluginDevice

PluginDevice::PluginDevice(std::shared_ptr<PluginLibrary> lib, int device_index)
    : lib_(std::move(lib)), ops_(&lib_->device()), index_(device_index) {
  const bool host_memory = PluginAbiAtLeast(*lib_, 1) &&
                           HVDA_HAS_FIELD(ops_, hvda_device_ops_v1, memory_host_accessible) &&
                           ops_->memory_host_accessible != 0;
  host_scale_ = host_memory && ops_->scale == nullptr;
  host_reduce_ = host_memory && ops_->reduce_into == nullptr;
}

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
  hvda_stream_t h = nullptr;
  HVDA_RETURN_IF_ERROR(Check(ops_->stream_create(index_, &h), "stream_create"));
  stream->reset(new PluginStream(ops_, h, true));
  return Status::OK();
}
Status PluginDevice::WrapStream(void* native, std::unique_ptr<Stream>* stream) {
  hvda_stream_t h = nullptr;
  HVDA_RETURN_IF_ERROR(Check(ops_->stream_wrap(index_, native, &h), "stream_wrap"));
  stream->reset(new PluginStream(ops_, h, false));
  return Status::OK();
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
                             std::to_string(static_cast<int>(seconds)) +
                             " s (HOROVOD_ACCEL_TIMEOUT_SECONDS plus a grace period): its work "
                             "is stuck; the stream and its buffers are abandoned.");
    }
    // Capped low: Adasum and fusion-buffer growth wait here in normal runs.
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(200));
  }
  GiveBackEvent(std::move(ev));
  return st;
}
Status PluginDevice::CreateEvent(std::unique_ptr<Event>* event) {
  hvda_event_t h = nullptr;
  HVDA_RETURN_IF_ERROR(Check(ops_->event_create(index_, &h), "event_create"));
  event->reset(new PluginEvent(ops_, h));
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
// The core's host kernels stand in for a host-accessible plugin's missing
// scale / reduce_into (ABI 1.1, memory_host_accessible): the stream's
// earlier work is awaited, then the kernel runs here; work enqueued later
// sees the result (the flag's contract).
Status PluginDevice::Scale(void* buf, int64_t count, DataType dtype, double factor, Stream* s) {
  if (count == 0) return Status::OK();
  if (!host_scale_) return Check(ops_->scale(buf, count, D(dtype), factor, Handle(s)), "scale");
  HVDA_RETURN_IF_ERROR(SynchronizeStream(s));
  kernels::Scale(buf, count, dtype, factor);
  return Status::OK();
}
Status PluginDevice::ReduceInto(void* dst, const void* src, int64_t count, DataType dtype,
                                ReduceOp op, Stream* s) {
  if (count == 0) return Status::OK();
  if (!host_reduce_)
    return Check(ops_->reduce_into(dst, src, count, D(dtype), R(op), Handle(s)), "reduce_into");
  if (!kernels::IsReducible(dtype, op))
    return Status::InvalidArgument(name() + ": the core's host kernels have no " +
                                   ReduceOpName(op) + " of " + DataTypeName(dtype));
  HVDA_RETURN_IF_ERROR(SynchronizeStream(s));
  kernels::Reduce2(dst, dst, src, count, dtype, op);
  return Status::OK();
}
bool PluginDevice::SupportsHostFunc() const {
  return HVDA_HAS_FIELD(ops_, hvda_device_ops_v1, launch_host_func) && ops_->launch_host_func;
}
Status PluginDevice::LaunchHostFunc(Stream* s, void (*fn)(void*), void* arg) {
  if (!SupportsHostFunc()) return DeviceExecution::LaunchHostFunc(s, fn, arg);
  return Check(ops_->launch_host_func(Handle(s), fn, arg), "launch_host_func");
}
Status PluginDevice::BatchedCopy(const std::vector<CopyDesc>& copies, Stream* s) {
  if (copies.empty()) return Status::OK();
  std::vector<hvda_copy_desc> c(copies.size());
  for (size_t i = 0; i < copies.size(); ++i) c[i] = {copies[i].dst, copies[i].src, copies[i].bytes};
  return Check(ops_->batched_copy(c.data(), c.size(), Handle(s)), "batched_copy");
}

// ---------------------------------------------------------------- PluginBackend

PluginBackend::PluginBackend(std::shared_ptr<PluginLibrary> lib, PluginDevice* device,
                             hvda_comm_t comm, int rank, int size)
    : lib_(std::move(lib)),
      ccl_(&lib_->ccl()),
      device_(device),
      comm_(comm),
      rank_(rank),
      size_(size),
      name_(lib_->plugin().name) {}

PluginBackend::~PluginBackend() {
  if (scratch_) device_->memory().Free(scratch_);
  ccl_->comm_destroy(comm_);
}

Status PluginBackend::Create(std::shared_ptr<PluginLibrary> lib, PluginDevice* device,
                             const CommunicatorSpec& spec,
                             std::unique_ptr<CollectiveBackend>* out) {
  const hvda_ccl_ops_v1& ccl = lib->ccl();
  const size_t id_bytes = ccl.unique_id_size();
  if (id_bytes == 0 || id_bytes > 4096)
    return Status::InvalidArgument(std::string("device plugin '") + lib->plugin().name +
                                   "' reports a unique id of " + std::to_string(id_bytes) +
                                   " bytes; the ABI allows 1 to 4096.");
  const bool v11 = PluginAbiAtLeast(*lib, 1);
  const hvda_ccl_ops_v1* table = &ccl;
  const decltype(ccl.unique_id_release) release =
      v11 && HVDA_HAS_FIELD(table, hvda_ccl_ops_v1, unique_id_release) ? ccl.unique_id_release
                                                                        : nullptr;
  const decltype(ccl.comm_init_rank_config) init_config =
      v11 && HVDA_HAS_FIELD(table, hvda_ccl_ops_v1, comm_init_rank_config)
          ? ccl.comm_init_rank_config
          : nullptr;
  std::string id(id_bytes, '\0');
  const std::string key = spec.prefix + "unique_id";
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(spec.timeout_seconds * 1000));
  // Rank 0 releases the id it made once its own init returned, or on any
  // earlier failure (plugin.h: unique_id_release).
  bool made = false;
  auto release_id = [&] {
    if (made && release != nullptr) release(id.data(), id_bytes);
    made = false;
  };
  if (spec.rank == 0) {
    hvda_status s = ccl.get_unique_id(&id[0], id_bytes);
    if (s != HVDA_OK) return lib->Error(s, "get_unique_id");
    made = true;
    Status published = spec.store->Set(key, id);
    if (!published.ok()) {
      release_id();
      return published;
    }
  } else {
    HVDA_RETURN_IF_ERROR(spec.store->Get(key, &id, timeout));
    if (id.size() != id_bytes)
      return Status::Unknown("the unique id published by rank 0 has " + std::to_string(id.size()) +
                             " bytes, this rank's plugin expects " + std::to_string(id_bytes) +
                             "; every rank must load the same plugin version.");
  }
  const double op_timeout =
      spec.job != nullptr ? spec.job->settings.accel_timeout_seconds : 0.0;
  hvda_comm_t comm = nullptr;
  hvda_status s;
  if (init_config != nullptr) {
    hvda_comm_config_v1 config{};
    config.struct_size = sizeof(config);
    config.init_timeout_seconds = spec.timeout_seconds;
    config.op_timeout_seconds = op_timeout > 0 ? op_timeout : 0.0;
    s = init_config(id.data(), id_bytes, spec.size, spec.rank, device->index(), &config, &comm);
  } else {
    s = ccl.comm_init_rank(id.data(), id_bytes, spec.size, spec.rank, device->index(),
                           spec.timeout_seconds, &comm);
  }
  // The failure is read before the release, which may overwrite last_error.
  Status failed = s == HVDA_OK ? Status::OK()
                               : lib->Error(s, std::string(init_config ? "comm_init_rank_config"
                                                                       : "comm_init_rank") +
                                                   " (rank " + std::to_string(spec.rank) +
                                                   " of " + std::to_string(spec.size) + ")");
  release_id();
  if (!failed.ok()) return failed;
  if (op_timeout > 0) device->SetDrainLimit(op_timeout + kTeardownGraceSeconds);
  out->reset(new PluginBackend(std::move(lib), device, comm, spec.rank, spec.size));
  return Status::OK();
}

Status PluginBackend::Check(hvda_status s, const char* what) const {
  if (s == HVDA_OK) return Status::OK();
  return lib_->Error(s, name_ + " " + what);
}

Status PluginBackend::Scratch(size_t bytes, Stream* s, void** ptr) {
  if (bytes > scratch_bytes_) {
    // Work already enqueued on s may still use the old buffer (mem_free
    // needs memory that no enqueued work uses). Growth is rare: sizes only rise.
    if (scratch_) {
      HVDA_RETURN_IF_ERROR(device_->execution().SynchronizeStream(s));
      device_->memory().Free(scratch_);
    }
    scratch_ = nullptr;
    scratch_bytes_ = 0;
    HVDA_RETURN_IF_ERROR(device_->memory().Allocate(bytes, &scratch_));
    scratch_bytes_ = bytes;
  }
  *ptr = scratch_;
  return Status::OK();
}

bool PluginBackend::Supports(CollectiveKind kind, DataType dtype, ReduceOp op) const {
  // What each collective below calls; data movement runs on bytes (uint8).
  auto has = [this](hvda_collective c, hvda_dtype t, hvda_reduce_op o) {
    return ccl_->supports(c, t, o) != 0;
  };
  const bool allgatherv = HVDA_HAS_FIELD(ccl_, hvda_ccl_ops_v1, allgatherv) && ccl_->allgatherv;
  const bool alltoallv = HVDA_HAS_FIELD(ccl_, hvda_ccl_ops_v1, alltoallv) && ccl_->alltoallv;
  switch (kind) {
    case CollectiveKind::kAllreduce:
    case CollectiveKind::kReducescatter:  // uneven: composed from allreduce
      return has(HVDA_COLL_ALLREDUCE, D(dtype), R(op));
    case CollectiveKind::kBroadcast:
      return has(HVDA_COLL_BROADCAST, HVDA_UINT8, HVDA_SUM);
    case CollectiveKind::kAllgather:  // uneven: allgatherv, else grouped broadcasts
      return has(HVDA_COLL_ALLGATHER, HVDA_UINT8, HVDA_SUM) &&
             (allgatherv || has(HVDA_COLL_BROADCAST, HVDA_UINT8, HVDA_SUM));
    case CollectiveKind::kAlltoall:  // alltoallv, else grouped send/recv
      return alltoallv || has(HVDA_COLL_SEND_RECV, HVDA_UINT8, HVDA_SUM);
    case CollectiveKind::kBarrier:
      return has(HVDA_COLL_ALLREDUCE, HVDA_INT32, HVDA_SUM);
  }
  return false;
}

Status PluginBackend::Allreduce(void* buf, int64_t count, DataType dtype, ReduceOp op,
                                Stream* s) {
  lib_->activity().Count(CollectiveKind::kAllreduce);
  return Check(ccl_->allreduce(buf, buf, count, D(dtype), R(op), comm_, PluginDevice::Handle(s)),
               "allreduce");
}

Status PluginBackend::Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes,
                                 Stream* s) {
  lib_->activity().Count(CollectiveKind::kAllgather);
  hvda_stream_t h = PluginDevice::Handle(s);
  if (AllEqual(bytes))
    return Check(ccl_->allgather(in, out, bytes[0], HVDA_UINT8, comm_, h), "allgather");
  std::vector<size_t> counts(bytes.begin(), bytes.end()), displs(size_, 0);
  for (int r = 1; r < size_; ++r) displs[r] = displs[r - 1] + counts[r - 1];
  if (HVDA_HAS_FIELD(ccl_, hvda_ccl_ops_v1, allgatherv) && ccl_->allgatherv != nullptr)
    return Check(ccl_->allgatherv(in, counts[rank_], out, counts.data(), displs.data(), HVDA_UINT8,
                                  comm_, h),
                 "allgatherv");
  // One broadcast per rank, issued as a group.
  HVDA_RETURN_IF_ERROR(Check(ccl_->group_start(), "group_start"));
  Status st;
  for (int r = 0; r < size_ && st.ok(); ++r) {
    char* dst = static_cast<char*>(out) + displs[r];
    st = Check(ccl_->broadcast(r == rank_ ? in : dst, dst, counts[r], HVDA_UINT8, r, comm_, h),
               "broadcast (allgatherv)");
  }
  Status end = Check(ccl_->group_end(), "group_end");
  return st.ok() ? end : st;
}

Status PluginBackend::Broadcast(void* buf, int64_t bytes, int root, Stream* s) {
  lib_->activity().Count(CollectiveKind::kBroadcast);
  return Check(ccl_->broadcast(buf, buf, bytes, HVDA_UINT8, root, comm_, PluginDevice::Handle(s)),
               "broadcast");
}

Status PluginBackend::Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                                const std::vector<int64_t>& recv_bytes, Stream* s) {
  lib_->activity().Count(CollectiveKind::kAlltoall);
  hvda_stream_t h = PluginDevice::Handle(s);
  std::vector<size_t> sc(send_bytes.begin(), send_bytes.end()), rc(recv_bytes.begin(), recv_bytes.end());
  std::vector<size_t> sd(size_, 0), rd(size_, 0);
  for (int r = 1; r < size_; ++r) {
    sd[r] = sd[r - 1] + sc[r - 1];
    rd[r] = rd[r - 1] + rc[r - 1];
  }
  if (HVDA_HAS_FIELD(ccl_, hvda_ccl_ops_v1, alltoallv) && ccl_->alltoallv != nullptr)
    return Check(ccl_->alltoallv(in, sc.data(), sd.data(), out, rc.data(), rd.data(), HVDA_UINT8,
                                 comm_, h),
                 "alltoallv");
  // This rank's own part is a device copy (plugin.h: send/recv never name
  // the caller), then grouped send/recv with every peer (the usual recipe of
  // the vendor libraries).
  // (The splits matrix makes both sizes equal.)
  HVDA_RETURN_IF_ERROR(device_->memory().CopyAsync(static_cast<char*>(out) + rd[rank_],
                                                   static_cast<const char*>(in) + sd[rank_],
                                                   std::min(sc[rank_], rc[rank_]), s));
  HVDA_RETURN_IF_ERROR(Check(ccl_->group_start(), "group_start"));
  Status st;
  for (int r = 0; r < size_ && st.ok(); ++r) {
    if (r == rank_) continue;
    if (sc[r] > 0)
      st = Check(ccl_->send(static_cast<const char*>(in) + sd[r], sc[r], HVDA_UINT8, r, comm_, h),
                 "send (alltoallv)");
    if (st.ok() && rc[r] > 0)
      st = Check(ccl_->recv(static_cast<char*>(out) + rd[r], rc[r], HVDA_UINT8, r, comm_, h),
                 "recv (alltoallv)");
  }
  Status end = Check(ccl_->group_end(), "group_end");
  return st.ok() ? end : st;
}

Status PluginBackend::Reducescatter(const void* in, void* out, const std::vector<int64_t>& counts,
                                    DataType dtype, ReduceOp op, Stream* s) {
  lib_->activity().Count(CollectiveKind::kReducescatter);
  hvda_stream_t h = PluginDevice::Handle(s);
  if (AllEqual(counts) && ccl_->supports(HVDA_COLL_REDUCESCATTER, D(dtype), R(op)))
    return Check(ccl_->reduce_scatter(in, out, counts[0], D(dtype), R(op), comm_, h),
                 "reduce_scatter");
  // Uneven segments: allreduce a copy, keep this rank's segment.
  const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  const size_t esize = DataTypeSize(dtype);
  void* tmp = nullptr;
  HVDA_RETURN_IF_ERROR(Scratch(total * esize, s, &tmp));
  HVDA_RETURN_IF_ERROR(device_->memory().CopyAsync(tmp, in, total * esize, s));
  HVDA_RETURN_IF_ERROR(Check(ccl_->allreduce(tmp, tmp, total, D(dtype), R(op), comm_, h),
                             "allreduce (reduce-scatter)"));
  const int64_t offset = std::accumulate(counts.begin(), counts.begin() + rank_, int64_t{0});
  return device_->memory().CopyAsync(out, static_cast<char*>(tmp) + offset * esize,
                                     counts[rank_] * esize, s);
}

Status PluginBackend::Barrier(Stream* s) {
  lib_->activity().Count(CollectiveKind::kBarrier);
  void* one = nullptr;
  HVDA_RETURN_IF_ERROR(Scratch(sizeof(int32_t), s, &one));
  return Check(ccl_->allreduce(one, one, 1, HVDA_INT32, HVDA_SUM, comm_, PluginDevice::Handle(s)),
               "allreduce (barrier)");
}

Status PluginBackend::AsyncError() const {
  return Check(ccl_->comm_get_async_error(comm_), "communicator");
}

void PluginBackend::Abort() { ccl_->comm_abort(comm_); }

void RegisterPluginDevice(Registry* registry) {
  DeviceRegistration device;
  device.kind = DeviceKind::kPlugin;
  device.name = "plugin";
  registry->AddDevice(std::move(device));

  BackendRegistration backend;
  backend.name = "plugin";
  backend.device = DeviceKind::kPlugin;
  backend.create = [](const CommunicatorSpec& spec, std::unique_ptr<CollectiveBackend>* out) {
    auto* device = dynamic_cast<PluginDevice*>(spec.device);
    if (device == nullptr)
      return Status::InvalidArgument("plugin backend: the communicator has no plugin device");
    return PluginBackend::Create(device->library_ptr(), device, spec, out);
  };
  registry->AddBackend(std::move(backend));
}

}  // namespace hvda
