// The collectives of hvda_ccl_ops_v1, each built on Mesh::Exchange.
//
// A call checks its arguments, then enqueues ONE task on the stream and
// returns (plugin.h: "returns once enqueued"); a call that fails enqueues
// nothing. The task (collective_tasks.cc) runs the whole collective on the
// stream's thread.
//
// The byte streams between ranks carry no headers (tcp_mesh.h), so a
// communicator's collectives must run in the same order on every rank: the
// order of their stream. Issue them all on one stream.
//
// allgatherv and alltoallv are left NULL: the core composes them (grouped
// broadcasts, grouped send/recv), which is what the groups here are for.
#include <cstdint>
#include <utility>
#include <vector>

#include "collective_tasks.h"
#include "kernels.h"
#include "plugin_state.h"
#include "streams.h"
#include "tables.h"

namespace example {

namespace {

// The calling thread's open group. plugin.h: groups are per thread (the one
// that issues the communicator's collectives), never nested, one
// communicator and one stream each.
struct OpenGroup {
  bool open = false;
  Comm* comm = nullptr;
  hvda_stream_t stream = nullptr;
  std::vector<GroupOp> ops;
};
thread_local OpenGroup t_group;

// Checks what every call checks; *bytes: count in bytes. `all_ranks`: a
// buffer holds nranks times count (allgather's recv, reduce_scatter's send).
hvda_status CheckCall(const char* what, hvda_comm_t comm, hvda_stream_t stream, hvda_dtype dtype,
                      size_t count, bool all_ranks, size_t* bytes) {
  if (comm == nullptr || stream == nullptr)
    return Fail(HVDA_INVALID_ARGUMENT, std::string(what) + ": comm or stream is NULL");
  const size_t size = ElementSize(dtype);
  if (size == 0)
    return Fail(HVDA_UNSUPPORTED, std::string(what) + ": dtype " + std::to_string(dtype) +
                                      " is unknown to this plugin (see supports())");
  const size_t n = all_ranks ? static_cast<size_t>(ToComm(comm)->mesh->size()) : 1;
  if (count > SIZE_MAX / size / n)
    return Fail(HVDA_INVALID_ARGUMENT, std::string(what) + ": count too large");
  *bytes = count * size;
  return HVDA_OK;
}

hvda_status NotOffered(const char* what, hvda_dtype dtype, hvda_reduce_op op) {
  return Fail(HVDA_UNSUPPORTED, std::string(what) + ": dtype " + std::to_string(dtype) +
                                    " with reduce op " + std::to_string(op) +
                                    " is not offered (see supports())");
}

hvda_status NotGrouped(const char* what) {
  return Fail(HVDA_INVALID_ARGUMENT, std::string(what) +
                                         " inside group_start/group_end: only send, recv and "
                                         "broadcast may be grouped");
}

// Enqueues `run(mesh)` as one task of `stream`.
template <typename Run>
hvda_status EnqueueTask(const char* what, hvda_comm_t comm, hvda_stream_t stream, Run run) {
  std::shared_ptr<Mesh> mesh = ToComm(comm)->mesh;  // the task's own reference
  return Guarded(what, [&] {
    ToStream(stream)->Enqueue([mesh, run] { return run(*mesh); });
    return HVDA_OK;
  });
}

hvda_status Allreduce(const void* send, void* recv, size_t count, hvda_dtype dtype,
                      hvda_reduce_op op, hvda_comm_t comm, hvda_stream_t stream) {
  size_t bytes = 0;
  if (hvda_status s = CheckCall("allreduce", comm, stream, dtype, count, true, &bytes)) return s;
  if (!CanReduce(dtype, op)) return NotOffered("allreduce", dtype, op);
  if (t_group.open) return NotGrouped("allreduce");
  return EnqueueTask("allreduce", comm, stream, [=](Mesh& mesh) {
    return ReduceTask(mesh, "allreduce", send, recv, count, dtype, op, 0);
  });
}

hvda_status ReduceScatter(const void* send, void* recv, size_t recv_count, hvda_dtype dtype,
                          hvda_reduce_op op, hvda_comm_t comm, hvda_stream_t stream) {
  size_t bytes = 0;
  if (hvda_status s = CheckCall("reduce_scatter", comm, stream, dtype, recv_count, true, &bytes))
    return s;
  if (!CanReduce(dtype, op)) return NotOffered("reduce_scatter", dtype, op);
  if (t_group.open) return NotGrouped("reduce_scatter");
  return EnqueueTask("reduce_scatter", comm, stream, [=](Mesh& mesh) {
    return ReduceTask(mesh, "reduce_scatter", send, recv, recv_count, dtype, op, bytes);
  });
}

hvda_status Allgather(const void* send, void* recv, size_t send_count, hvda_dtype dtype,
                      hvda_comm_t comm, hvda_stream_t stream) {
  size_t bytes = 0;
  if (hvda_status s = CheckCall("allgather", comm, stream, dtype, send_count, true, &bytes))
    return s;
  if (t_group.open) return NotGrouped("allgather");
  return EnqueueTask("allgather", comm, stream,
                     [=](Mesh& mesh) { return AllgatherTask(mesh, send, recv, bytes); });
}

// Adds a call to the open group, which must be on one comm and stream.
hvda_status AddToGroup(const char* what, hvda_comm_t comm, hvda_stream_t stream, GroupOp op) {
  if (t_group.comm == nullptr) t_group.comm = ToComm(comm), t_group.stream = stream;
  if (t_group.comm != ToComm(comm) || t_group.stream != stream)
    return Fail(HVDA_INVALID_ARGUMENT, std::string(what) + ": a group holds calls on one "
                                                           "communicator and one stream only");
  return Guarded(what, [&] {
    t_group.ops.push_back(op);
    return HVDA_OK;
  });
}

hvda_status Broadcast(const void* send, void* recv, size_t count, hvda_dtype dtype, int root,
                      hvda_comm_t comm, hvda_stream_t stream) {
  size_t bytes = 0;
  if (hvda_status s = CheckCall("broadcast", comm, stream, dtype, count, false, &bytes)) return s;
  if (root < 0 || root >= ToComm(comm)->mesh->size())
    return Fail(HVDA_INVALID_ARGUMENT, "broadcast: root " + std::to_string(root) + " is no rank");
  const GroupOp op{GroupOp::kBroadcast, root, send, recv, bytes};
  if (t_group.open) return AddToGroup("broadcast", comm, stream, op);
  return EnqueueTask("broadcast", comm, stream,
                     [op](Mesh& mesh) { return GroupTask(mesh, std::vector<GroupOp>{op}); });
}

hvda_status PointToPoint(GroupOp::Kind kind, const void* send, void* recv, size_t count,
                         hvda_dtype dtype, int peer, hvda_comm_t comm, hvda_stream_t stream) {
  const char* what = kind == GroupOp::kSend ? "send" : "recv";
  size_t bytes = 0;
  if (hvda_status s = CheckCall(what, comm, stream, dtype, count, false, &bytes)) return s;
  if (!t_group.open)
    return Fail(HVDA_INVALID_ARGUMENT, std::string(what) + " outside group_start/group_end: "
                                                           "point-to-point calls are always grouped");
  const Mesh& mesh = *ToComm(comm)->mesh;
  if (peer == mesh.rank())
    return Fail(HVDA_INVALID_ARGUMENT, std::string(what) + ": peer " + std::to_string(peer) +
                                           " is this rank; copy your own part with "
                                           "memcpy_async (plugin.h, ABI 1.1)");
  if (peer < 0 || peer >= mesh.size())
    return Fail(HVDA_INVALID_ARGUMENT, std::string(what) + ": peer " + std::to_string(peer) +
                                           " is no rank of this communicator");
  return AddToGroup(what, comm, stream, GroupOp{kind, peer, send, recv, bytes});
}

hvda_status Send(const void* buf, size_t count, hvda_dtype dtype, int peer, hvda_comm_t comm,
                 hvda_stream_t stream) {
  return PointToPoint(GroupOp::kSend, buf, nullptr, count, dtype, peer, comm, stream);
}

hvda_status Recv(void* buf, size_t count, hvda_dtype dtype, int peer, hvda_comm_t comm,
                 hvda_stream_t stream) {
  return PointToPoint(GroupOp::kRecv, nullptr, buf, count, dtype, peer, comm, stream);
}

hvda_status GroupStart() {
  if (t_group.open)
    return Fail(HVDA_INVALID_ARGUMENT, "group_start: a group is already open on this thread");
  t_group = OpenGroup();
  t_group.open = true;
  return HVDA_OK;
}

// Enqueues what was issued (plugin.h: also after a call inside failed).
hvda_status GroupEnd() {
  if (!t_group.open) return Fail(HVDA_INVALID_ARGUMENT, "group_end without group_start");
  OpenGroup group = std::move(t_group);
  t_group = OpenGroup();
  if (group.ops.empty()) return HVDA_OK;
  return EnqueueTask("group_end", ToHandle(group.comm), group.stream,
                     [ops = std::move(group.ops)](Mesh& mesh) { return GroupTask(mesh, ops); });
}

int Supports(hvda_collective collective, hvda_dtype dtype, hvda_reduce_op op) {
  switch (collective) {
    case HVDA_COLL_ALLREDUCE:
    case HVDA_COLL_REDUCESCATTER:
      return CanReduce(dtype, op) ? 1 : 0;
    case HVDA_COLL_ALLGATHER:
    case HVDA_COLL_BROADCAST:
    case HVDA_COLL_SEND_RECV:
      return dtype == HVDA_UINT8 ? 1 : 0;  // the core moves bytes
    default:
      return 0;  // alltoall, barrier: the core composes them
  }
}

}  // namespace

void FillCollectiveOps(hvda_ccl_ops_v1* ops) {
  ops->supports = Supports;
  ops->allreduce = Allreduce;
  ops->broadcast = Broadcast;
  ops->allgather = Allgather;
  ops->reduce_scatter = ReduceScatter;
  ops->send = Send;
  ops->recv = Recv;
  ops->group_start = GroupStart;
  ops->group_end = GroupEnd;
  ops->allgatherv = nullptr;  // the core composes them
  ops->alltoallv = nullptr;
}

}  // namespace example
