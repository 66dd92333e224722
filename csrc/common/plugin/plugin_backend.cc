#include "common/plugin/plugin_backend.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <numeric>

#include "common/job_spec.h"
#include "common/plugin/plugin_abi_enums.h"
#include "common/store/store.h"

namespace hvda {
namespace {

bool AllEqual(const std::vector<int64_t>& v) {
  return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<int64_t>()) == v.end();
}

// Byte offsets of consecutive segments of the given sizes (exclusive prefix sums).
std::vector<size_t> Displacements(const std::vector<size_t>& sizes) {
  std::vector<size_t> displs(sizes.size(), 0);
  for (size_t r = 1; r < sizes.size(); ++r) displs[r] = displs[r - 1] + sizes[r - 1];
  return displs;
}

}  // namespace

PluginBackend::PluginBackend(std::shared_ptr<PluginLibrary> lib, PluginDevice* device,
                             hvda_comm_t comm, int rank, int size)
    : lib_(std::move(lib)),
      collectives_(&lib_->ops().collectives),
      device_(device),
      comm_(comm),
      rank_(rank),
      size_(size),
      name_(lib_->plugin().name) {}

PluginBackend::~PluginBackend() {
  if (scratch_) device_->memory().Free(scratch_);
  collectives_->comm_destroy(comm_);
}

Status PluginBackend::Create(std::shared_ptr<PluginLibrary> lib, PluginDevice* device,
                             const CommunicatorSpec& spec,
                             std::unique_ptr<CollectiveBackend>* out) {
  const PluginCollectiveOps& ccl = lib->ops().collectives;
  const size_t id_bytes = ccl.unique_id_size();
  if (id_bytes == 0 || id_bytes > 4096)
    return Status::InvalidArgument(std::string("device plugin '") + lib->plugin().name +
                                   "' reports a unique id of " + std::to_string(id_bytes) +
                                   " bytes; the ABI allows 1 to 4096.");
  std::string id(id_bytes, '\0');
  const std::string key = spec.prefix + "unique_id";
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(spec.timeout_seconds * 1000));
  // Rank 0 releases the id it made once its own init returned, or on any
  // earlier failure (plugin.h: unique_id_release).
  bool made = false;
  auto release_id = [&] {
    if (made) ccl.release_unique_id(id.data(), id_bytes);
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
  hvda_comm_config_v1 config{};
  config.struct_size = sizeof(config);
  config.init_timeout_seconds = spec.timeout_seconds;
  config.op_timeout_seconds = op_timeout > 0 ? op_timeout : 0.0;
  hvda_comm_t comm = nullptr;
  hvda_status s = ccl.comm_init(id.data(), id_bytes, spec.size, spec.rank, device->index(),
                                config, &comm);
  // The failure is read before the release, which may overwrite last_error.
  Status failed = s == HVDA_OK ? Status::OK()
                               : lib->Error(s, std::string(ccl.comm_init_name) + " (rank " +
                                                   std::to_string(spec.rank) + " of " +
                                                   std::to_string(spec.size) + ")");
  release_id();
  if (!failed.ok()) return failed;
  if (op_timeout > 0) device->SetDrainLimit(op_timeout + kTeardownGraceSeconds);
  out->reset(new PluginBackend(std::move(lib), device, comm, spec.rank, spec.size));
  return Status::OK();
}

Status PluginBackend::Check(hvda_status status, const char* what) const {
  if (status == HVDA_OK) return Status::OK();
  return lib_->Error(status, name_ + " " + what);
}

Status PluginBackend::Scratch(size_t bytes, Stream* stream, void** ptr) {
  if (bytes > scratch_bytes_) {
    // Work already enqueued on the stream may still use the old buffer
    // (mem_free needs memory that no enqueued work uses). Growth is rare:
    // sizes only rise.
    if (scratch_) {
      HVDA_RETURN_IF_ERROR(device_->execution().SynchronizeStream(stream));
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
  auto offers = [this](hvda_collective collective, hvda_dtype type, hvda_reduce_op reduce) {
    return collectives_->supports(collective, type, reduce) != 0;
  };
  const bool allgatherv = collectives_->allgatherv != nullptr;
  const bool alltoallv = collectives_->alltoallv != nullptr;
  switch (kind) {
    case CollectiveKind::kAllreduce:
    case CollectiveKind::kReducescatter:  // uneven: composed from allreduce
      return offers(HVDA_COLL_ALLREDUCE, AbiDataType(dtype), AbiReduceOp(op));
    case CollectiveKind::kBroadcast:
      return offers(HVDA_COLL_BROADCAST, HVDA_UINT8, HVDA_SUM);
    case CollectiveKind::kAllgather:  // uneven: allgatherv, else grouped broadcasts
      return offers(HVDA_COLL_ALLGATHER, HVDA_UINT8, HVDA_SUM) &&
             (allgatherv || offers(HVDA_COLL_BROADCAST, HVDA_UINT8, HVDA_SUM));
    case CollectiveKind::kAlltoall:  // alltoallv, else grouped send/recv
      return alltoallv || offers(HVDA_COLL_SEND_RECV, HVDA_UINT8, HVDA_SUM);
    case CollectiveKind::kBarrier:
      return offers(HVDA_COLL_ALLREDUCE, HVDA_INT32, HVDA_SUM);
  }
  return false;
}

Status PluginBackend::Allreduce(void* buf, int64_t count, DataType dtype, ReduceOp op,
                                Stream* stream) {
  lib_->activity().Count(CollectiveKind::kAllreduce);
  return Check(collectives_->allreduce(buf, buf, count, AbiDataType(dtype), AbiReduceOp(op), comm_,
                                       PluginDevice::Handle(stream)),
               "allreduce");
}

Status PluginBackend::Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes,
                                 Stream* stream) {
  lib_->activity().Count(CollectiveKind::kAllgather);
  hvda_stream_t handle = PluginDevice::Handle(stream);
  if (AllEqual(bytes))
    return Check(collectives_->allgather(in, out, bytes[0], HVDA_UINT8, comm_, handle),
                 "allgather");
  const std::vector<size_t> counts(bytes.begin(), bytes.end());
  const std::vector<size_t> displs = Displacements(counts);
  if (collectives_->allgatherv != nullptr)
    return Check(collectives_->allgatherv(in, counts[rank_], out, counts.data(), displs.data(),
                                          HVDA_UINT8, comm_, handle),
                 "allgatherv");
  // One broadcast per rank, issued as a group.
  HVDA_RETURN_IF_ERROR(Check(collectives_->group_start(), "group_start"));
  Status st;
  for (int r = 0; r < size_ && st.ok(); ++r) {
    char* dst = static_cast<char*>(out) + displs[r];
    st = Check(collectives_->broadcast(r == rank_ ? in : dst, dst, counts[r], HVDA_UINT8, r, comm_,
                                       handle),
               "broadcast (allgatherv)");
  }
  Status end = Check(collectives_->group_end(), "group_end");
  return st.ok() ? end : st;
}

Status PluginBackend::Broadcast(void* buf, int64_t bytes, int root, Stream* stream) {
  lib_->activity().Count(CollectiveKind::kBroadcast);
  return Check(collectives_->broadcast(buf, buf, bytes, HVDA_UINT8, root, comm_,
                                       PluginDevice::Handle(stream)),
               "broadcast");
}

Status PluginBackend::Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                                const std::vector<int64_t>& recv_bytes, Stream* stream) {
  lib_->activity().Count(CollectiveKind::kAlltoall);
  hvda_stream_t handle = PluginDevice::Handle(stream);
  const std::vector<size_t> send_counts(send_bytes.begin(), send_bytes.end());
  const std::vector<size_t> recv_counts(recv_bytes.begin(), recv_bytes.end());
  const std::vector<size_t> send_displs = Displacements(send_counts);
  const std::vector<size_t> recv_displs = Displacements(recv_counts);
  if (collectives_->alltoallv != nullptr)
    return Check(collectives_->alltoallv(in, send_counts.data(), send_displs.data(), out,
                                         recv_counts.data(), recv_displs.data(), HVDA_UINT8,
                                         comm_, handle),
                 "alltoallv");
  // This rank's own part is a device copy (plugin.h: send/recv never name
  // the caller), then grouped send/recv with every peer (the usual recipe of
  // the vendor libraries).
  // (The splits matrix makes both sizes equal.)
  HVDA_RETURN_IF_ERROR(device_->memory().CopyAsync(
      static_cast<char*>(out) + recv_displs[rank_],
      static_cast<const char*>(in) + send_displs[rank_],
      std::min(send_counts[rank_], recv_counts[rank_]), stream));
  HVDA_RETURN_IF_ERROR(Check(collectives_->group_start(), "group_start"));
  Status st;
  for (int r = 0; r < size_ && st.ok(); ++r) {
    if (r == rank_) continue;
    if (send_counts[r] > 0)
      st = Check(collectives_->send(static_cast<const char*>(in) + send_displs[r], send_counts[r],
                                    HVDA_UINT8, r, comm_, handle),
                 "send (alltoallv)");
    if (st.ok() && recv_counts[r] > 0)
      st = Check(collectives_->recv(static_cast<char*>(out) + recv_displs[r], recv_counts[r],
                                    HVDA_UINT8, r, comm_, handle),
                 "recv (alltoallv)");
  }
  Status end = Check(collectives_->group_end(), "group_end");
  return st.ok() ? end : st;
}

Status PluginBackend::Reducescatter(const void* in, void* out, const std::vector<int64_t>& counts,
                                    DataType dtype, ReduceOp op, Stream* stream) {
  lib_->activity().Count(CollectiveKind::kReducescatter);
  hvda_stream_t handle = PluginDevice::Handle(stream);
  const hvda_dtype abi_dtype = AbiDataType(dtype);
  const hvda_reduce_op abi_op = AbiReduceOp(op);
  if (AllEqual(counts) && collectives_->supports(HVDA_COLL_REDUCESCATTER, abi_dtype, abi_op))
    return Check(
        collectives_->reduce_scatter(in, out, counts[0], abi_dtype, abi_op, comm_, handle),
        "reduce_scatter");
  // Uneven segments: allreduce a copy, keep this rank's segment.
  const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  const size_t element_size = DataTypeSize(dtype);
  void* tmp = nullptr;
  HVDA_RETURN_IF_ERROR(Scratch(total * element_size, stream, &tmp));
  HVDA_RETURN_IF_ERROR(device_->memory().CopyAsync(tmp, in, total * element_size, stream));
  HVDA_RETURN_IF_ERROR(
      Check(collectives_->allreduce(tmp, tmp, total, abi_dtype, abi_op, comm_, handle),
            "allreduce (reduce-scatter)"));
  const int64_t offset = std::accumulate(counts.begin(), counts.begin() + rank_, int64_t{0});
  return device_->memory().CopyAsync(out, static_cast<char*>(tmp) + offset * element_size,
                                     counts[rank_] * element_size, stream);
}

Status PluginBackend::Barrier(Stream* stream) {
  lib_->activity().Count(CollectiveKind::kBarrier);
  void* one = nullptr;
  HVDA_RETURN_IF_ERROR(Scratch(sizeof(int32_t), stream, &one));
  return Check(collectives_->allreduce(one, one, 1, HVDA_INT32, HVDA_SUM, comm_,
                                       PluginDevice::Handle(stream)),
               "allreduce (barrier)");
}

Status PluginBackend::AsyncError() const {
  return Check(collectives_->comm_get_async_error(comm_), "communicator");
}

void PluginBackend::Abort() { collectives_->comm_abort(comm_); }

// Declared in plugin_device.h (the Runtime registers the device kind
// through it); here because the backend it registers needs both classes.
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
