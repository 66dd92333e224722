// Request builder: validates one operation a framework thread enqueues and
// turns it into the Request that negotiation carries. Stateless: a free
// function of its arguments, no Runtime needed (tests call it directly).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/message.h"
#include "common/process_set.h"
#include "common/util/status.h"

namespace hvda {

// One operation to enqueue (the binding fills it from Python arguments).
struct EnqueueArgs {
  RequestType type = RequestType::kAllreduce;
  std::string name;
  int process_set_id = 0;
  const void* input = nullptr;  // caller-owned, valid until the Work completes
  void* output = nullptr;       // ditto (allreduce, broadcast, reducescatter)
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> shape;
  int device = -1;               // -1: CPU; else the accelerator index
  std::string device_type;       // accelerators: the framework's device type name
  void* stream = nullptr;        // accelerators: the framework's native stream (null: default)
  ReduceOp op = ReduceOp::kSum;
  double prescale = 1.0;
  double postscale = 1.0;
  int root_rank = -1;            // broadcast: global rank
  std::vector<int64_t> splits;   // alltoall: rows per destination; empty = equal
};

// Checks *a for process set `ps` (its id, ranks and this rank's set_rank are
// read; nothing else) and fills *r. InvalidArgument / Unimplemented name the
// tensor and say what to do. On success a->name and a->shape are moved into
// r (the rest of *a is left as it was); on failure *a is unchanged and *r is
// unspecified. Never blocks; thread-safe (touches only its arguments).
Status BuildRequest(EnqueueArgs* a, const ProcessSetState& ps, Request* r);

}  // namespace hvda
