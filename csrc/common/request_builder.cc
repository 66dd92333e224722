#include "common/request_builder.h"

#include "common/adasum.h"

namespace hvda {
namespace {

// Adasum (csrc/common/adasum.h): allreduce only, floating point only, on the
// global process set only (upstream's limits), host tensors only (the tree
// runs on host memory, NOTE [Adasum on CPU]); any number of ranks.
Status ValidateAdasum(const EnqueueArgs& a, int process_set_id) {
  const std::string& n = a.name;
  if (a.type != RequestType::kAllreduce)
    return Status::Unimplemented(std::string(RequestTypeOpName(a.type)) + " of '" + n +
                                   "' does not support op=Adasum; use allreduce, or "
                                   "op=hvd.Average / hvd.Sum.");
  if (!AdasumSupportsDtype(a.dtype))
    return Status::InvalidArgument("Adasum of tensor '" + n + "' needs a floating-point tensor "
                                   "(float16, bfloat16, float32 or float64), got " +
                                   DataTypeName(a.dtype) + "; convert it or use op=hvd.Sum.");
  if (a.device >= 0)
    return Status::Unimplemented("Adasum of tensor '" + n + "' runs on CPU tensors only; move "
                                   "the tensor to the CPU or use op=hvd.Average.");
  if (process_set_id != 0)
    return Status::Unimplemented("Adasum of tensor '" + n + "' is only supported on the global "
                                   "process set, not process set " +
                                   std::to_string(process_set_id) + ".");
  return Status::OK();
}

}  // namespace

Status BuildRequest(EnqueueArgs* args, const ProcessSetState& ps, Request* r) {
  EnqueueArgs& a = *args;
  const std::string& n = a.name;
  if (!IsValidDataType(static_cast<int32_t>(a.dtype)))
    return Status::InvalidArgument("tensor '" + n + "' has an unsupported data type");
  if (a.device >= 0) {
    if (a.device_type.empty())
      return Status::InvalidArgument("tensor '" + n + "' is on accelerator " +
                                     std::to_string(a.device) + " without a device type; the "
                                     "framework adapter must say which (its framework's device "
                                     "type name).");
  }
  for (int64_t d : a.shape)
    if (d < 0) return Status::InvalidArgument("tensor '" + n + "' has a negative dimension");
  const bool reduces = a.type == RequestType::kAllreduce || a.type == RequestType::kReducescatter;
  if (reduces) {
    int op = static_cast<int>(a.op);
    if (op < 0 || op > static_cast<int>(ReduceOp::kProduct))
      return Status::InvalidArgument("unknown reduction op " + std::to_string(op) + " for '" + n + "'");
    if (a.op == ReduceOp::kAdasum) HVDA_RETURN_IF_ERROR(ValidateAdasum(a, ps.id));
    if (a.dtype == DataType::kBool)
      return Status::InvalidArgument("cannot reduce bool tensor '" + n +
                                     "'; convert it to an integer type first.");
  }
  const bool needs_dim = a.type == RequestType::kAllgather || a.type == RequestType::kAlltoall ||
                         a.type == RequestType::kReducescatter;
  if (needs_dim && a.shape.empty())
    return Status::InvalidArgument(std::string(RequestTypeOpName(a.type)) + " of '" + n +
                                   "' needs a tensor with at least one dimension, got a scalar.");
  r->rank = ps.set_rank;
  r->type = a.type;
  r->dtype = a.dtype;
  r->device = a.device;
  r->reduce_op = reduces ? a.op : ReduceOp::kSum;
  r->prescale = a.prescale;
  r->postscale = a.postscale;
  if (a.type == RequestType::kBroadcast) {
    r->root_rank = ps.SetRankOf(a.root_rank);
    if (r->root_rank < 0)
      return Status::InvalidArgument("broadcast root rank " + std::to_string(a.root_rank) +
                                     " of '" + n + "' is not a member of process set " +
                                     std::to_string(ps.id) + ".");
  }
  if (a.type == RequestType::kAlltoall) {
    const int64_t d0 = a.shape[0];
    if (a.splits.empty()) {
      if (d0 % ps.size() != 0)
        return Status::InvalidArgument("alltoall of '" + n + "' without splits needs the first "
                                       "dimension (" + std::to_string(d0) +
                                       ") to be divisible by the number of ranks (" +
                                       std::to_string(ps.size()) + ").");
      r->splits.assign(ps.size(), d0 / ps.size());
    } else {
      if (static_cast<int>(a.splits.size()) != ps.size())
        return Status::InvalidArgument("alltoall splits of '" + n + "' have " +
                                       std::to_string(a.splits.size()) + " entries; need one per "
                                       "rank (" + std::to_string(ps.size()) + ").");
      int64_t sum = 0;
      for (int64_t s : a.splits) {
        if (s < 0) return Status::InvalidArgument("alltoall splits of '" + n + "' must be >= 0");
        sum += s;
      }
      if (sum != d0)
        return Status::InvalidArgument("alltoall splits of '" + n + "' sum to " +
                                       std::to_string(sum) + ", but the first dimension is " +
                                       std::to_string(d0) + ".");
      r->splits = a.splits;
    }
  }
  // Last: the error messages above name the tensor through a.name.
  r->name = std::move(a.name);
  r->shape = std::move(a.shape);
  return Status::OK();
}

}  // namespace hvda
