// The collectives as stream tasks: what runs on a stream's thread once
// collectives.cc enqueued a call. Each moves its data with ONE
// Mesh::Exchange and returns its status (a failure also breaks the mesh).
//
// The algorithms are the simplest correct ones, not the fastest: every rank
// sends its data straight to every peer (no ring, no tree). Reductions
// combine the contributions in rank order 0..n-1 on every rank, so all
// ranks get identical bits. A real library would pipeline and chunk.
//
// The buffers are device (= host) memory owned by the core; they stay valid
// until the task ran (the core frees only memory no enqueued work uses).
#pragma once

#include <cstddef>
#include <vector>

#include "horovod_accel/plugin.h"
#include "tcp_mesh.h"

namespace example {

// One call of a group (or a lone broadcast, a group of one).
struct GroupOp {
  enum Kind { kSend, kRecv, kBroadcast } kind;
  int peer;  // the peer; for a broadcast its root
  const void* send;
  void* recv;
  size_t bytes;
};

// Allreduce (segment_stride 0) and reduce-scatter (segment_stride = the
// segment's bytes: this rank gets segment rank() of every rank's `send`).
hvda_status ReduceTask(Mesh& mesh, const char* what, const void* send, void* recv, size_t count,
                       hvda_dtype dtype, hvda_reduce_op op, size_t segment_stride);

// recv = every rank's `bytes` of send, in rank order.
hvda_status AllgatherTask(Mesh& mesh, const void* send, void* recv, size_t bytes);

// A group's sends, recvs and broadcasts, all in one Exchange (a lone
// broadcast is a group of one).
hvda_status GroupTask(Mesh& mesh, const std::vector<GroupOp>& ops);

}  // namespace example
