// hvda_ccl_ops_v1 over an NCCL-like library (vendor_api.h).
#include "devices/cuda_like/ccl_ops.h"

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <thread>

#include "devices/cuda_like/plugin_instance.h"

namespace hvda {
namespace vendor {
namespace {

PluginComm* C(hvda_comm_t c) { return reinterpret_cast<PluginComm*>(c); }
NativeStream N(hvda_stream_t s) { return reinterpret_cast<PluginStream*>(s)->native; }

// The library's dtype for d, or a failure naming it.
hvda_status Dtype(PluginInstance* p, hvda_dtype d, int* out) {
  *out = (d >= 0 && d <= HVDA_UINT16) ? p->spec().dtype[d] : -1;
  if (*out >= 0) return HVDA_OK;
  return Fail(HVDA_UNSUPPORTED, std::string(p->spec().ccl_name) + " has no element type for "
                                "horovod_accel dtype " + std::to_string(d));
}

int OpOf(const VendorSpec& spec, hvda_reduce_op op) {
  switch (op) {
    case HVDA_SUM: return spec.op_sum;
    case HVDA_PRODUCT: return spec.op_prod;
    case HVDA_MAX: return spec.op_max;
    case HVDA_MIN: return spec.op_min;
    case HVDA_AVERAGE: return spec.op_avg;
    default: return -1;
  }
}

hvda_status Op(PluginInstance* p, hvda_reduce_op op, int* out) {
  *out = OpOf(p->spec(), op);
  if (*out >= 0) return HVDA_OK;
  return Fail(HVDA_UNSUPPORTED, std::string(p->spec().ccl_name) + " has no reduction op " +
                                    std::to_string(op));
}

size_t UniqueIdSize() { return sizeof(UniqueId); }

hvda_status GetUniqueId(void* id, size_t bytes) {
  HVDA_REQUIRE(p);
  if (bytes < sizeof(UniqueId))
    return Fail(HVDA_INVALID_ARGUMENT, "get_unique_id: buffer smaller than unique_id_size()");
  UniqueId u{};
  if (auto s = CclResult(*p, p->api().get_unique_id(&u), p->spec().ccl.get_unique_id)) return s;
  std::memcpy(id, &u, sizeof(u));
  return HVDA_OK;
}

// comm_init_rank runs on a helper thread so that a peer that never arrives
// turns into HVDA_TIMEOUT instead of a hang. On timeout the helper is
// abandoned: if the library still completes the init later, the helper
// destroys the communicator it got.
struct InitCall {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false, abandoned = false;
  int result = 0;
  NativeComm comm = nullptr;
};

hvda_status CommInitRank(const void* id, size_t id_bytes, int nranks, int rank, int device,
                         double timeout_seconds, hvda_comm_t* out) {
  HVDA_REQUIRE(p);
  if (id_bytes < sizeof(UniqueId))
    return Fail(HVDA_INVALID_ARGUMENT, "comm_init_rank: unique id shorter than unique_id_size()");
  UniqueId u;
  std::memcpy(&u, id, sizeof(u));
  auto call = std::make_shared<InitCall>();
  const VendorApi api = p->api();  // copied: the helper must not touch the instance
  std::thread([call, api, u, nranks, rank, device] {
    NativeComm comm = nullptr;
    int r = api.set_device(device);
    if (r == 0) r = api.comm_init_rank(&comm, nranks, u, rank);
    std::lock_guard<std::mutex> lock(call->mu);
    if (call->abandoned) {
      if (r == 0 && comm != nullptr) api.comm_destroy(comm);
      return;
    }
    call->result = r;
    call->comm = comm;
    call->done = true;
    call->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(call->mu);
  const auto limit = std::chrono::duration<double>(timeout_seconds > 0 ? timeout_seconds : 1e9);
  if (!call->cv.wait_for(lock, limit, [&] { return call->done; })) {
    call->abandoned = true;
    return Fail(HVDA_TIMEOUT, std::string(p->spec().ccl.comm_init_rank) + " did not complete "
                              "within " + std::to_string(static_cast<int>(timeout_seconds)) +
                              " s: a peer did not join the communicator (rank " +
                              std::to_string(rank) + " of " + std::to_string(nranks) + ").");
  }
  if (call->result != 0) {
    // The helper wrote result; report it with the symbol's name.
    return CclResult(*p, call->result, p->spec().ccl.comm_init_rank);
  }
  auto* c = new (std::nothrow) PluginComm();
  if (c == nullptr) {
    p->api().comm_destroy(call->comm);
    return Fail(HVDA_OUT_OF_MEMORY, "out of host memory for a communicator handle");
  }
  c->native = call->comm;
  c->device = device;
  c->nranks = nranks;
  c->rank = rank;
  *out = reinterpret_cast<hvda_comm_t>(c);
  return HVDA_OK;
}

// ABI 1.1: the core's settings. NCCL-like libraries have a true abort
// (comm_abort ends pending work at once), so the operation timeout only
// needs remembering, for messages; the id needs no release (plain bytes).
hvda_status CommInitRankConfig(const void* id, size_t id_bytes, int nranks, int rank, int device,
                               const hvda_comm_config_v1* config, hvda_comm_t* out) {
  if (config == nullptr) return Fail(HVDA_INVALID_ARGUMENT, "comm_init_rank_config: no config");
  const double init_timeout =
      HVDA_HAS_FIELD(config, hvda_comm_config_v1, init_timeout_seconds)
          ? config->init_timeout_seconds
          : 0.0;
  hvda_status s = CommInitRank(id, id_bytes, nranks, rank, device, init_timeout, out);
  if (s == HVDA_OK && HVDA_HAS_FIELD(config, hvda_comm_config_v1, op_timeout_seconds))
    C(*out)->op_timeout_seconds = config->op_timeout_seconds;
  return s;
}

hvda_status CommDestroy(hvda_comm_t comm) {
  HVDA_REQUIRE(p);
  PluginComm* c = C(comm);
  hvda_status s = HVDA_OK;
  // After an abort the library has already released it.
  if (!c->aborted) s = CclResult(*p, p->api().comm_destroy(c->native), p->spec().ccl.comm_destroy);
  delete c;
  return s;
}

hvda_status CommAbort(hvda_comm_t comm) {
  HVDA_REQUIRE(p);
  PluginComm* c = C(comm);
  if (c->aborted) return HVDA_OK;
  c->aborted = true;
  return CclResult(*p, p->api().comm_abort(c->native), p->spec().ccl.comm_abort);
}

hvda_status CommGetAsyncError(hvda_comm_t comm) {
  HVDA_REQUIRE(p);
  PluginComm* c = C(comm);
  if (c->aborted)
    return Fail(HVDA_REMOTE_ERROR,
                c->op_timeout_seconds > 0
                    ? "the communicator was aborted (a peer failed, or an operation ran longer "
                      "than HOROVOD_ACCEL_TIMEOUT_SECONDS = " +
                          std::to_string(static_cast<int>(c->op_timeout_seconds)) + " s)"
                    : std::string("the communicator was aborted"));
  int async = 0;
  if (auto s = CclResult(*p, p->api().comm_get_async_error(c->native, &async),
                         p->spec().ccl.comm_get_async_error))
    return s;
  if (CclResult(*p, async, p->spec().ccl.comm_get_async_error) == HVDA_OK) return HVDA_OK;
  // Whatever broke the communicator asynchronously (ECCL reports a lost
  // peer as a system error), it is unusable: a remote error to the core.
  return Fail(HVDA_REMOTE_ERROR, std::string(p->spec().ccl_name) + " reported an asynchronous "
                                 "error (a peer failed or left): " + LastError());
}

int Supports(hvda_collective coll, hvda_dtype dtype, hvda_reduce_op op) {
  PluginInstance* p = Instance();
  if (p == nullptr) return 0;
  const VendorSpec* spec = &p->spec();
  switch (coll) {
    case HVDA_COLL_ALLREDUCE:
    case HVDA_COLL_REDUCESCATTER:
      return dtype >= 0 && dtype <= HVDA_UINT16 && dtype != HVDA_BOOL && spec->dtype[dtype] >= 0 &&
             OpOf(*spec, op) >= 0;
    default:
      return 1;  // data movement runs on bytes
  }
}

hvda_status AllReduce(const void* send, void* recv, size_t count, hvda_dtype dtype,
                      hvda_reduce_op op, hvda_comm_t comm, hvda_stream_t stream) {
  HVDA_REQUIRE(p);
  int dt, vop;
  if (auto s = Dtype(p, dtype, &dt)) return s;
  if (auto s = Op(p, op, &vop)) return s;
  return CclResult(*p, p->api().all_reduce(send, recv, count, dt, vop, C(comm)->native, N(stream)),
                   p->spec().ccl.all_reduce);
}

hvda_status Broadcast(const void* send, void* recv, size_t count, hvda_dtype dtype, int root,
                      hvda_comm_t comm, hvda_stream_t stream) {
  HVDA_REQUIRE(p);
  int dt;
  if (auto s = Dtype(p, dtype, &dt)) return s;
  return CclResult(*p, p->api().broadcast(send, recv, count, dt, root, C(comm)->native, N(stream)),
                   p->spec().ccl.broadcast);
}

hvda_status AllGather(const void* send, void* recv, size_t send_count, hvda_dtype dtype,
                      hvda_comm_t comm, hvda_stream_t stream) {
  HVDA_REQUIRE(p);
  int dt;
  if (auto s = Dtype(p, dtype, &dt)) return s;
  return CclResult(*p, p->api().all_gather(send, recv, send_count, dt, C(comm)->native, N(stream)),
                   p->spec().ccl.all_gather);
}

hvda_status ReduceScatter(const void* send, void* recv, size_t recv_count, hvda_dtype dtype,
                          hvda_reduce_op op, hvda_comm_t comm, hvda_stream_t stream) {
  HVDA_REQUIRE(p);
  int dt, vop;
  if (auto s = Dtype(p, dtype, &dt)) return s;
  if (auto s = Op(p, op, &vop)) return s;
  return CclResult(*p, p->api().reduce_scatter(send, recv, recv_count, dt, vop, C(comm)->native,
                                               N(stream)),
                   p->spec().ccl.reduce_scatter);
}

hvda_status Send(const void* buf, size_t count, hvda_dtype dtype, int peer, hvda_comm_t comm,
                 hvda_stream_t stream) {
  HVDA_REQUIRE(p);
  int dt;
  if (auto s = Dtype(p, dtype, &dt)) return s;
  return CclResult(*p, p->api().send(buf, count, dt, peer, C(comm)->native, N(stream)),
                   p->spec().ccl.send);
}

hvda_status Recv(void* buf, size_t count, hvda_dtype dtype, int peer, hvda_comm_t comm,
                 hvda_stream_t stream) {
  HVDA_REQUIRE(p);
  int dt;
  if (auto s = Dtype(p, dtype, &dt)) return s;
  return CclResult(*p, p->api().recv(buf, count, dt, peer, C(comm)->native, N(stream)),
                   p->spec().ccl.recv);
}

hvda_status GroupStart() {
  HVDA_REQUIRE(p);
  return CclResult(*p, p->api().group_start(), p->spec().ccl.group_start);
}

hvda_status GroupEnd() {
  HVDA_REQUIRE(p);
  return CclResult(*p, p->api().group_end(), p->spec().ccl.group_end);
}

hvda_status AllGatherV(const void* send, size_t send_count, void* recv, const size_t* counts,
                       const size_t* displs, hvda_dtype dtype, hvda_comm_t comm,
                       hvda_stream_t stream) {
  HVDA_REQUIRE(p);
  int dt;
  if (auto s = Dtype(p, dtype, &dt)) return s;
  return CclResult(*p, p->api().all_gather_v(send, send_count, recv, counts, displs, dt,
                                             C(comm)->native, N(stream)),
                   p->spec().ccl.all_gather_v);
}

hvda_status AlltoallV(const void* send, const size_t* send_counts, const size_t* send_displs,
                      void* recv, const size_t* recv_counts, const size_t* recv_displs,
                      hvda_dtype dtype, hvda_comm_t comm, hvda_stream_t stream) {
  HVDA_REQUIRE(p);
  int dt;
  if (auto s = Dtype(p, dtype, &dt)) return s;
  return CclResult(*p, p->api().alltoall_v(send, send_counts, send_displs, dt, recv, recv_counts,
                                           recv_displs, dt, C(comm)->native, N(stream)),
                   p->spec().ccl.alltoall_v);
}

}  // namespace

const hvda_ccl_ops_v1* CclOps(const VendorSpec& spec) {
  static const hvda_ccl_ops_v1 ops = [&spec] {
    hvda_ccl_ops_v1 o{};
    o.struct_size = sizeof(o);
    o.unique_id_size = UniqueIdSize;
    o.get_unique_id = GetUniqueId;
    o.comm_init_rank = CommInitRank;
    o.comm_destroy = CommDestroy;
    o.comm_abort = CommAbort;
    o.comm_get_async_error = CommGetAsyncError;
    o.supports = Supports;
    o.allreduce = AllReduce;
    o.broadcast = Broadcast;
    o.allgather = AllGather;
    o.reduce_scatter = ReduceScatter;
    o.send = Send;
    o.recv = Recv;
    o.group_start = GroupStart;
    o.group_end = GroupEnd;
    o.allgatherv = spec.ccl.all_gather_v != nullptr ? AllGatherV : nullptr;
    o.alltoallv = spec.ccl.alltoall_v != nullptr ? AlltoallV : nullptr;
    o.unique_id_release = nullptr;  // ABI 1.1: ids hold no resources
    o.comm_init_rank_config = CommInitRankConfig;
    return o;
  }();
  return &ops;
}

}  // namespace vendor
}  // namespace hvda
