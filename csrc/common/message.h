// Requests (what a rank wants to do with a named tensor) and Responses (what
// the coordinator decided every rank does), plus their wire encoding.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/util/status.h"

namespace hvda {

enum class RequestType : int32_t {
  kAllreduce = 0,
  kAllgather = 1,
  kBroadcast = 2,
  kJoin = 3,
  kAdasum = 4,
  kAlltoall = 5,
  kBarrier = 6,
  kReducescatter = 7,
  kAddProcessSet = 8,     // internal: shape holds the new set's global ranks
  kRemoveProcessSet = 9,  // internal: shape holds {process set id}
};

const char* RequestTypeName(RequestType t);  // "ALLREDUCE", ...
const char* RequestTypeOpName(RequestType t);  // "allreduce", ... (for messages)

struct Request {
  int32_t rank = 0;  // rank within the process set
  RequestType type = RequestType::kAllreduce;
  DataType dtype = DataType::kFloat32;
  int32_t device = -1;     // -1: CPU
  int32_t root_rank = -1;  // broadcast: rank within the process set
  ReduceOp reduce_op = ReduceOp::kSum;
  double prescale = 1.0;
  double postscale = 1.0;
  std::string name;
  std::vector<int64_t> shape;
  std::vector<int64_t> splits;  // alltoall: rows sent to each set rank
};

// The values of RequestType (ResponseTypeName relies on it), plus kError:
// the two lists are kept side by side on purpose.
enum class ResponseType : int32_t {
  kAllreduce = 0,
  kAllgather = 1,
  kBroadcast = 2,
  kJoin = 3,
  kAdasum = 4,
  kAlltoall = 5,
  kBarrier = 6,
  kReducescatter = 7,
  kAddProcessSet = 8,
  kRemoveProcessSet = 9,
  kError = 10,
};

const char* ResponseTypeName(ResponseType t);

// One decision, identical on every rank. A fused response names several
// tensors; per-tensor fields are indexed like `names`.
struct Response {
  ResponseType type = ResponseType::kAllreduce;
  std::vector<std::string> names;
  std::string error;  // kError only
  DataType dtype = DataType::kFloat32;
  int32_t device = -1;
  int32_t root_rank = -1;
  ReduceOp reduce_op = ReduceOp::kSum;
  double prescale = 1.0;
  double postscale = 1.0;
  std::vector<std::vector<int64_t>> shapes;  // per tensor (coordinator's view)
  // allgather: per tensor, dim0 of every set rank ([tensor][rank] flattened).
  std::vector<int64_t> rank_dim0;
  // alltoall: rows rank i sends to rank j at [i * size + j].
  std::vector<int64_t> splits_matrix;
  int32_t last_joined_rank = -1;  // join
  std::vector<int64_t> payload;   // add/remove process set: ranks or id

  int64_t TensorElements(size_t i) const;
};

struct RequestList {
  std::vector<Request> requests;
  bool shutdown = false;
  // Every rank of the job is stuck, as far as this rank knows (NOTE
  // [Deadlock detection] in coordinator.h).
  bool stuck = false;
  // Global set only: a set of this rank declared a deadlock; the job
  // generation ends (NOTE [A deadlock ends the generation]).
  bool deadlock_end = false;
};

// The tunable settings every rank applies from one cycle on (autotune,
// docs/design/autotune.md): global rank 0 sends them with the global set's
// response list; every rank applies them to that very cycle's fusion.
struct TunedParameters {
  int64_t fusion_threshold_bytes = 0;
  double cycle_time_ms = 0;
};

struct ResponseList {
  std::vector<Response> responses;
  bool shutdown = false;
  bool all_stuck = false;    // every member's RequestList said stuck
  int32_t joined_count = 0;  // ranks joined after this cycle
  std::vector<int64_t> shutdown_ranks;  // global ranks that asked to shut down
  // This set's coordinator failed its waiting requests for a deadlock this
  // cycle (NOTE [Deadlock detection] in coordinator.h).
  bool deadlock_declared = false;
  // Global set: the generation ends this cycle because of a deadlock (with
  // `shutdown`; NOTE [A deadlock ends the generation] in coordinator.h).
  bool deadlock_end = false;
  bool has_params = false;  // global set only: `params` take effect this cycle
  TunedParameters params;
};

std::string Serialize(const RequestList& l);
Status Deserialize(const std::string& bytes, RequestList* out);
std::string Serialize(const ResponseList& l);
Status Deserialize(const std::string& bytes, ResponseList* out);

std::string ShapeString(const std::vector<int64_t>& shape);  // "[4, 5]"

}  // namespace hvda
