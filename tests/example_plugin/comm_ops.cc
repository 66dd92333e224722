// The communicator half of hvda_ccl_ops_v1: unique ids, comm_init_rank,
// destroy, abort, async error (the mesh itself: tcp_mesh.h).
//
// An id's resource is a listening socket in the process that made the id
// (rank 0), kept in the plugin state's listener table under the id's nonce.
// Who closes it depends on the ABI this build speaks:
// - ABI 1.1: unique_id_release, exactly once per id, whether comm_init_rank
//   succeeded, failed, or never ran (the core failed to publish the id);
// - ABI 1.0 has no release, so rank 0's comm_init_rank takes the listener
//   out of the table and closes it when done. An id whose comm_init_rank
//   never runs on rank 0 (the core failed to publish it) then holds its
//   port until finalize: the plugin cannot tell an abandoned id from a slow
//   one. That is why 1.1 added unique_id_release.
#include <unistd.h>

#include <random>

#include "plugin_state.h"
#include "sockets.h"
#include "tables.h"
#include "tcp_mesh.h"

namespace example {

namespace {

size_t UniqueIdSize() { return kMeshIdBytes; }

// Opens rank 0's listener and writes its address into the id. The address
// advertised is HOROVOD_EXAMPLE_ADDR, else 127.0.0.1: a job spanning hosts
// must set it (on rank 0's host) to an address the other hosts reach.
hvda_status GetUniqueId(void* id, size_t id_bytes) {
  PluginState* state = nullptr;
  if (hvda_status s = RequireState(&state)) return s;
  if (id == nullptr || id_bytes != kMeshIdBytes)
    return Fail(HVDA_INVALID_ARGUMENT, "get_unique_id: pass a buffer of unique_id_size() bytes");
  return Guarded("get_unique_id", [&] {
    MeshId mesh_id;
    int fd = -1;
    if (hvda_status s = Listen(&fd, &mesh_id.port))
      return Fail(s, std::string("get_unique_id: ") + LastError());
    std::random_device random;
    mesh_id.ip = state->settings().address;
    mesh_id.pid = static_cast<uint32_t>(::getpid());
    mesh_id.nonce = (static_cast<uint64_t>(random()) << 32) | random();
    state->AddListener(mesh_id.nonce, fd);  // the table owns the fd now
    EncodeMeshId(mesh_id, id);
    return HVDA_OK;
  });
}

hvda_status InitComm(const void* id, size_t id_bytes, int nranks, int rank, int device,
                     double init_timeout_seconds, double op_timeout_seconds, hvda_comm_t* comm) {
  PluginState* state = nullptr;
  if (hvda_status s = RequireState(&state)) return s;
  if (hvda_status s = CheckDevice(device)) return s;
  if (comm == nullptr || nranks < 1 || rank < 0 || rank >= nranks)
    return Fail(HVDA_INVALID_ARGUMENT, "comm_init_rank: rank " + std::to_string(rank) + " of " +
                                           std::to_string(nranks) + " (or comm NULL)");
  MeshId mesh_id;
  if (hvda_status s = DecodeMeshId(id, id_bytes, &mesh_id))
    return Fail(s, std::string("comm_init_rank: ") + LastError());

  int listener = -1;
  if (rank == 0) {
    if (mesh_id.pid != static_cast<uint32_t>(::getpid()))
      return Fail(HVDA_INVALID_ARGUMENT,
                  "comm_init_rank: rank 0 must run in the process that called get_unique_id "
                  "(process " + std::to_string(mesh_id.pid) + "; this is " +
                      std::to_string(::getpid()) + ")");
#if HVDA_PLUGIN_ABI_MINOR >= 1
    listener = state->FindListener(mesh_id.nonce);  // borrowed; unique_id_release closes it
#else
    listener = state->TakeListener(mesh_id.nonce);  // ours now: closed below
#endif
    if (listener < 0)
      return Fail(HVDA_INVALID_ARGUMENT,
                  "comm_init_rank: this id's listener is gone (the id was used or released "
                  "already): make a new id for every communicator");
  }
  std::shared_ptr<Mesh> mesh;
  hvda_status s = Guarded("comm_init_rank", [&] {
    return Mesh::Connect(mesh_id, listener, nranks, rank, init_timeout_seconds,
                         op_timeout_seconds, &mesh);
  });
#if HVDA_PLUGIN_ABI_MINOR < 1
  if (rank == 0) CloseFd(listener);  // ABI 1.0: no unique_id_release will come
#endif
  if (s != HVDA_OK) return s;
  return Guarded("comm_init_rank", [&] {
    state->TrackComm(mesh);
    *comm = ToHandle(new Comm{mesh});
    return HVDA_OK;
  });
}

// A 1.0 core calls only this: the op timeout is then the core's
// HOROVOD_ACCEL_TIMEOUT_SECONDS as the plugin reads it (default 300).
hvda_status CommInitRank(const void* id, size_t id_bytes, int nranks, int rank, int device,
                         double timeout_seconds, hvda_comm_t* comm) {
  PluginState* state = nullptr;
  if (hvda_status s = RequireState(&state)) return s;
  return InitComm(id, id_bytes, nranks, rank, device, timeout_seconds,
                  state->settings().op_timeout_seconds, comm);
}

// Destroying the handle never waits: work still queued keeps the mesh alive
// (tables.h) and ends within its own op timeout.
hvda_status CommDestroy(hvda_comm_t comm) {
  delete ToComm(comm);
  return HVDA_OK;
}

hvda_status CommAbort(hvda_comm_t comm) {
  if (comm == nullptr) return Fail(HVDA_INVALID_ARGUMENT, "comm_abort: comm is NULL");
  ToComm(comm)->mesh->Abort();
  return HVDA_OK;
}

hvda_status CommGetAsyncError(hvda_comm_t comm) {
  if (comm == nullptr) return Fail(HVDA_INVALID_ARGUMENT, "comm_get_async_error: comm is NULL");
  return ToComm(comm)->mesh->AsyncError();
}

#if HVDA_PLUGIN_ABI_MINOR >= 1
hvda_status UniqueIdRelease(const void* id, size_t id_bytes) {
  PluginState* state = nullptr;
  if (hvda_status s = RequireState(&state)) return s;
  MeshId mesh_id;
  if (hvda_status s = DecodeMeshId(id, id_bytes, &mesh_id))
    return Fail(s, std::string("unique_id_release: ") + LastError());
  // Peers still inside comm_init_rank (after a failure) see the connection
  // refused or reset and fail; nothing of theirs points at this socket.
  int fd = state->TakeListener(mesh_id.nonce);
  if (fd < 0)
    return Fail(HVDA_INVALID_ARGUMENT,
                "unique_id_release: unknown id (released twice, or made by another process)");
  CloseFd(fd);
  return HVDA_OK;
}

hvda_status CommInitRankConfig(const void* id, size_t id_bytes, int nranks, int rank, int device,
                               const hvda_comm_config_v1* config, hvda_comm_t* comm) {
  PluginState* state = nullptr;
  if (hvda_status s = RequireState(&state)) return s;
  if (config == nullptr) return Fail(HVDA_INVALID_ARGUMENT, "comm_init_rank_config: config is NULL");
  // Fields past the core's struct_size are absent (plugin.h "versioning").
  const double init_timeout =
      HVDA_HAS_FIELD(config, hvda_comm_config_v1, init_timeout_seconds) ? config->init_timeout_seconds : 0;
  const double op_timeout = HVDA_HAS_FIELD(config, hvda_comm_config_v1, op_timeout_seconds)
                                ? config->op_timeout_seconds
                                : state->settings().op_timeout_seconds;
  return InitComm(id, id_bytes, nranks, rank, device, init_timeout, op_timeout, comm);
}
#endif

}  // namespace

void FillCommOps(hvda_ccl_ops_v1* ops) {
  ops->unique_id_size = UniqueIdSize;
  ops->get_unique_id = GetUniqueId;
  ops->comm_init_rank = CommInitRank;
  ops->comm_destroy = CommDestroy;
  ops->comm_abort = CommAbort;
  ops->comm_get_async_error = CommGetAsyncError;
#if HVDA_PLUGIN_ABI_MINOR >= 1
  ops->unique_id_release = UniqueIdRelease;
  ops->comm_init_rank_config = CommInitRankConfig;
#endif
}

}  // namespace example
