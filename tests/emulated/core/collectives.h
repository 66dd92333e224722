// Each collective as a plan part: a closure that, on the stream's worker,
// does the call's local work (own-block copies, snapshots of inputs a
// receive would overwrite) and appends its sends, receives and reductions to
// the plan. Arguments are already validated; pointers are shadow addresses
// that the caller keeps mapped; byte counts and displacements are in bytes.
//
// Algorithms (one per kind, the same for every communicator size):
//   allreduce: block b of the buffer is reduced by rank b (in rank order,
//     so all ranks get identical bits) and sent to every other rank;
//   reduce-scatter: allreduce's first half;
//   broadcast: the root sends to every rank;
//   allgather(v): every rank sends its block to every rank;
//   alltoallv, send/recv: point to point.
// In place (s == r, or NCCL's r + rank * block for allgather and s + rank *
// block for reduce-scatter) works for every kind.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "plan.h"
#include "reduce.h"

namespace hvda_emu {

using PlanPart = std::function<void(Plan&)>;

PlanPart AllReducePart(const char* s, char* r, size_t count, const Reduction& red);
PlanPart ReduceScatterPart(const char* s, char* r, size_t recvcount, const Reduction& red);
PlanPart BroadcastPart(const char* s, char* r, size_t bytes, int root);
PlanPart AllGatherPart(const char* s, char* r, size_t bytes);
// recv_bytes[p] at recv_displs[p] of r is rank p's block; s holds this rank's.
PlanPart AllGatherVPart(const char* s, char* r, std::vector<size_t> recv_bytes,
                        std::vector<size_t> recv_displs);
PlanPart AlltoAllvPart(const char* s, std::vector<size_t> send_bytes,
                       std::vector<size_t> send_displs, char* r, std::vector<size_t> recv_bytes,
                       std::vector<size_t> recv_displs);
PlanPart SendPart(const char* s, size_t bytes, int peer);
PlanPart RecvPart(char* r, size_t bytes, int peer);

}  // namespace hvda_emu
