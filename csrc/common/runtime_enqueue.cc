// Runtime: enqueue-time validation and queueing (framework threads).
#include <algorithm>
#include <numeric>

#include "common/adasum.h"
#include "common/runtime.h"

namespace hvda {
namespace {

std::shared_ptr<Work> FailedWork(const Status& st) {
  auto w = std::make_shared<Work>();
  w->Complete(st);
  return w;
}

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

Status Runtime::ValidateAndBuild(EnqueueArgs& a, ProcessSetState* ps, TensorEntry* e) {
  const std::string& n = a.name;
  if (!IsValidDataType(static_cast<int32_t>(a.dtype)))
    return Status::InvalidArgument("tensor '" + n + "' has an unsupported data type");
  if (a.device >= 0) {
    if (a.device_type.empty())
      return Status::InvalidArgument("tensor '" + n + "' is on accelerator " +
                                     std::to_string(a.device) + " without a device type; the "
                                     "framework adapter must say which (e.g. 'cuda', 'gcu').");
  }
  for (int64_t d : a.shape)
    if (d < 0) return Status::InvalidArgument("tensor '" + n + "' has a negative dimension");
  const bool reduces = a.type == RequestType::kAllreduce || a.type == RequestType::kReducescatter;
  if (reduces) {
    int op = static_cast<int>(a.op);
    if (op < 0 || op > static_cast<int>(ReduceOp::kProduct))
      return Status::InvalidArgument("unknown reduction op " + std::to_string(op) + " for '" + n + "'");
    if (a.op == ReduceOp::kAdasum) HVDA_RETURN_IF_ERROR(ValidateAdasum(a, ps->id));
    if (a.dtype == DataType::kBool)
      return Status::InvalidArgument("cannot reduce bool tensor '" + n +
                                     "'; convert it to an integer type first.");
  }
  const bool needs_dim = a.type == RequestType::kAllgather || a.type == RequestType::kAlltoall ||
                         a.type == RequestType::kReducescatter;
  if (needs_dim && a.shape.empty())
    return Status::InvalidArgument(std::string(RequestTypeOpName(a.type)) + " of '" + n +
                                   "' needs a tensor with at least one dimension, got a scalar.");
  Request& r = e->request;
  r.rank = ps->set_rank;
  r.type = a.type;
  r.dtype = a.dtype;
  r.device = a.device;
  r.reduce_op = reduces ? a.op : ReduceOp::kSum;
  r.prescale = a.prescale;
  r.postscale = a.postscale;
  if (a.type == RequestType::kBroadcast) {
    r.root_rank = ps->SetRankOf(a.root_rank);
    if (r.root_rank < 0)
      return Status::InvalidArgument("broadcast root rank " + std::to_string(a.root_rank) +
                                     " of '" + n + "' is not a member of process set " +
                                     std::to_string(ps->id) + ".");
  }
  if (a.type == RequestType::kAlltoall) {
    const int64_t d0 = a.shape[0];
    if (a.splits.empty()) {
      if (d0 % ps->size() != 0)
        return Status::InvalidArgument("alltoall of '" + n + "' without splits needs the first "
                                       "dimension (" + std::to_string(d0) +
                                       ") to be divisible by the number of ranks (" +
                                       std::to_string(ps->size()) + ").");
      r.splits.assign(ps->size(), d0 / ps->size());
    } else {
      if (static_cast<int>(a.splits.size()) != ps->size())
        return Status::InvalidArgument("alltoall splits of '" + n + "' have " +
                                       std::to_string(a.splits.size()) + " entries; need one per "
                                       "rank (" + std::to_string(ps->size()) + ").");
      int64_t sum = 0;
      for (int64_t s : a.splits) {
        if (s < 0) return Status::InvalidArgument("alltoall splits of '" + n + "' must be >= 0");
        sum += s;
      }
      if (sum != d0)
        return Status::InvalidArgument("alltoall splits of '" + n + "' sum to " +
                                       std::to_string(sum) + ", but the first dimension is " +
                                       std::to_string(d0) + ".");
      r.splits = a.splits;
    }
  }
  e->input = a.input;
  e->output = a.output;
  e->work = std::make_shared<Work>(activity_);
  e->work->SetDriver(work_driver_);
  if (a.device >= 0) HVDA_RETURN_IF_ERROR(RecordReady(a, e));
  // Last: the error messages above name the tensor through a.name.
  r.name = std::move(a.name);
  r.shape = std::move(a.shape);
  return Status::OK();
}

Status Runtime::RecordReady(const EnqueueArgs& a, TensorEntry* e) {
  std::shared_ptr<PluginDevice> device;
  Status bound = accel_.Bind(a.device_type, a.device, &device);
  if (!bound.ok()) return Status::InvalidArgument("'" + a.name + "': " + bound.reason());
  std::unique_ptr<Stream> framework;
  HVDA_RETURN_IF_ERROR(device->execution().WrapStream(a.stream, &framework));
  std::unique_ptr<Event> ready;
  HVDA_RETURN_IF_ERROR(device->TakeEvent(&ready));
  Status st = device->execution().RecordEvent(ready.get(), framework.get());
  if (!st.ok()) {
    device->GiveBackEvent(std::move(ready));
    return st;
  }
  // The event, not the wrapper, carries the ordering. It goes back to the
  // device (which it keeps alive) once the entry is done with it.
  Event* raw = ready.release();
  e->ready = std::shared_ptr<Event>(
      raw, [device](Event* ev) { device->GiveBackEvent(std::unique_ptr<Event>(ev)); });
  return Status::OK();
}

Status Runtime::Enqueue(std::vector<EnqueueArgs> ops, std::vector<std::shared_ptr<Work>>* works) {
  works->clear();
  if (ops.empty()) return CheckInitialized();
  std::vector<TensorEntry> entries(ops.size());
  HVDA_RETURN_IF_ERROR(EnqueueEntries(ops.data(), entries.data(), ops.size()));
  for (auto& w : entries) works->push_back(std::move(w.work));
  return Status::OK();
}

Status Runtime::EnqueueOne(EnqueueArgs op, std::shared_ptr<Work>* work) {
  TensorEntry entry;
  HVDA_RETURN_IF_ERROR(EnqueueEntries(&op, &entry, 1));
  *work = std::move(entry.work);
  return Status::OK();
}

// ops[0..n) -> entries[0..n) (default-constructed), queued as one group. On
// success each entry keeps only its Work (TensorQueue::Add took the rest); on
// a refusal nothing is queued. After a failure of the job, every op gets a
// Work already failed with that error.
Status Runtime::EnqueueEntries(EnqueueArgs* ops, TensorEntry* entries, size_t n) {
  HVDA_RETURN_IF_ERROR(CheckInitialized());
  {
    std::lock_guard<std::mutex> lock(failure_mu_);
    if (!failure_.ok()) {
      for (size_t i = 0; i < n; ++i) entries[i].work = FailedWork(failure_);
      return Status::OK();
    }
  }
  {
    std::lock_guard<std::mutex> lock(sets_mu_);
    const int id = ops[0].process_set_id;
    auto it = sets_.find(id);
    if (it == sets_.end())
      return Status::InvalidArgument("process set " + std::to_string(id) +
                                     " is not registered (was it removed?).");
    ProcessSetState* ps = it->second.get();
    if (!ps->member())
      return Status::InvalidArgument("rank " + std::to_string(topo_.rank) +
                                     " is not a member of process set " + std::to_string(id) +
                                     "; only its member ranks may run collectives on it.");
    for (size_t i = 0; i < n; ++i)
      HVDA_RETURN_IF_ERROR(ValidateAndBuild(ops[i], ps, &entries[i]));
    HVDA_RETURN_IF_ERROR(ps->queue.Add(entries, n));
  }
  activity_->NoteActivity();
  NoteEnqueued();
  return Status::OK();
}

std::shared_ptr<Work> Runtime::EnqueueJoin(int device) {
  TensorEntry e;
  e.request.type = RequestType::kJoin;
  e.request.name = "__join__";
  e.request.device = device;
  e.work = std::make_shared<Work>(activity_);
  e.work->SetDriver(work_driver_);
  std::vector<TensorEntry> v;
  std::shared_ptr<Work> w = e.work;
  {
    std::lock_guard<std::mutex> lock(sets_mu_);
    auto it = sets_.find(0);
    if (it == sets_.end() || !initialized_)
      return FailedWork(Status::InvalidArgument("Horovod has not been initialized; call hvd.init() first."));
    e.request.rank = it->second->set_rank;
    v.push_back(std::move(e));
    Status st = it->second->queue.Add(std::move(v));
    if (!st.ok()) return FailedWork(Status::InvalidArgument("join() is already in progress on this rank."));
  }
  activity_->NoteActivity();
  Wake();
  return w;
}

Status Runtime::EnqueueBarrier(int process_set_id, std::shared_ptr<Work>* work) {
  EnqueueArgs a;
  a.type = RequestType::kBarrier;
  a.name = "__barrier__";
  a.process_set_id = process_set_id;
  a.dtype = DataType::kUInt8;
  std::vector<std::shared_ptr<Work>> works;
  std::vector<EnqueueArgs> ops{a};
  HVDA_RETURN_IF_ERROR(Enqueue(std::move(ops), &works));
  *work = works[0];
  return Status::OK();
}

}  // namespace hvda
