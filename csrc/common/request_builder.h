// Request builder: validates one operation a framework thread enqueues and
// turns it into the Request that negotiation carries. Stateless: a free
// function of its arguments, no Runtime needed (tests call it directly).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/message.h"
#include "common/output_allocator.h"
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
  // accelerators: "" when `stream` is the native handle, else the kind of
  // framework object it is ("tensorflow": a PluggableDevice SP_Stream), which
  // the device's plugin maps to its native stream (plugin.h, ABI 1.2).
  std::string stream_framework;
  // allgather / alltoall: where the result goes. Empty: the core allocates it
  // (Work::output or Work::device_output). Else called once, on the core's
  // executor thread, with the result's shape and size in bytes, to get the
  // framework's buffer (on the op's device) that the collective then writes;
  // a failure fails the op with its message.
  OutputAllocator allocate_output;
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
