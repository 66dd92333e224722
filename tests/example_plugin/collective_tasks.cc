// The collectives as stream tasks (collective_tasks.h): what runs on the
// stream's thread, each collective as one Mesh::Exchange.
#include "collective_tasks.h"

#include <cstring>
#include <vector>

#include "kernels.h"

namespace example {

namespace {

// out = parts[0] op parts[1] op ... op parts[n-1], each part `count`
// elements, laid out one after another.
void ReduceInRankOrder(void* out, const char* parts, int n, size_t count, hvda_dtype dtype,
                       hvda_reduce_op op) {
  const size_t bytes = count * ElementSize(dtype);
  std::memcpy(out, parts, bytes);
  for (int r = 1; r < n; ++r) Reduce(out, parts + r * bytes, count, dtype, op);
}

}  // namespace

// Every contribution is copied into `parts` before anything is written to
// recv, so send == recv (in place) is safe.
hvda_status ReduceTask(Mesh& mesh, const char* what, const void* send, void* recv, size_t count,
                       hvda_dtype dtype, hvda_reduce_op op, size_t segment_stride) {
  const size_t bytes = count * ElementSize(dtype);
  if (bytes == 0) return HVDA_OK;
  const int n = mesh.size(), me = mesh.rank();
  const char* in = static_cast<const char*>(send);
  std::vector<char> parts(bytes * n);  // rank r's contribution at r * bytes
  std::memcpy(parts.data() + me * bytes, in + me * segment_stride, bytes);
  std::vector<SendSpan> sends;
  std::vector<RecvSpan> recvs;
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    sends.push_back({p, in + p * segment_stride, bytes});
    recvs.push_back({p, parts.data() + p * bytes, bytes});
  }
  if (hvda_status s = mesh.Exchange(what, sends, recvs)) return s;
  ReduceInRankOrder(recv, parts.data(), n, count, dtype, op);
  return HVDA_OK;
}

// Runs every call of a group in ONE Exchange, so that no call waits for a
// later one (plugin.h: "nothing in a group may wait for a later call").
// Local copies (a root's own broadcast) happen after the Exchange, once no
// send still reads its source.
hvda_status GroupTask(Mesh& mesh, const std::vector<GroupOp>& ops) {
  std::vector<SendSpan> sends;
  std::vector<RecvSpan> recvs;
  std::vector<const GroupOp*> local_copies;
  for (const GroupOp& op : ops) {
    if (op.kind == GroupOp::kSend) {
      sends.push_back({op.peer, op.send, op.bytes});
    } else if (op.kind == GroupOp::kRecv) {
      recvs.push_back({op.peer, op.recv, op.bytes});
    } else if (op.peer != mesh.rank()) {  // a broadcast from another rank
      recvs.push_back({op.peer, op.recv, op.bytes});
    } else {  // this rank's broadcast
      for (int p = 0; p < mesh.size(); ++p)
        if (p != mesh.rank()) sends.push_back({p, op.send, op.bytes});
      if (op.send != op.recv) local_copies.push_back(&op);
    }
  }
  const char* what = ops.size() == 1 && ops[0].kind == GroupOp::kBroadcast ? "broadcast" : "group";
  if (hvda_status s = mesh.Exchange(what, sends, recvs)) return s;
  for (const GroupOp* op : local_copies) std::memmove(op->recv, op->send, op->bytes);
  return HVDA_OK;
}

hvda_status AllgatherTask(Mesh& mesh, const void* send, void* recv, size_t bytes) {
  const int me = mesh.rank();
  char* out = static_cast<char*>(recv);
  std::vector<SendSpan> sends;
  std::vector<RecvSpan> recvs;
  for (int p = 0; p < mesh.size(); ++p) {
    if (p == me) continue;
    sends.push_back({p, send, bytes});
    recvs.push_back({p, out + p * bytes, bytes});
  }
  if (hvda_status s = mesh.Exchange("allgather", sends, recvs)) return s;
  if (bytes > 0 && out + me * bytes != send) std::memmove(out + me * bytes, send, bytes);
  return HVDA_OK;
}

}  // namespace example
