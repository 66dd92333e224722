// The core C API table (csrc/include/horovod_accel/core_api.h) over
// hvda::Runtime, and `_core.Runtime.c_api()` that hands out its address.
//
// Every entry point catches C++ exceptions and turns them into a status plus
// a thread-local message: nothing but C crosses to the framework library.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "common/runtime.h"
#include "horovod_accel/core_api.h"
#include "python/bindings.h"
#include "python/enqueue_args.h"

namespace py = pybind11;

namespace hvda {
namespace python {
namespace {

thread_local std::string g_last_error;

int32_t Fail(StatusCode code, std::string message) {
  g_last_error = std::move(message);
  return static_cast<int32_t>(code);
}

int32_t Fail(const Status& st) { return Fail(st.code(), st.reason()); }

const char* LastError() { return g_last_error.c_str(); }

Runtime* AsRuntime(hvda_core_runtime* rt) { return reinterpret_cast<Runtime*>(rt); }

// Calls done(user, result of w) for a completed Work, releasing its name
// first so the framework may submit the same name again as soon as it learns
// of the completion.
void Deliver(Work* w, const Status& st, hvda_core_done_fn done, void* user) {
  w->ReleaseName();
  hvda_core_result r{};
  r.struct_size = sizeof(r);
  r.status = static_cast<int32_t>(st.code());
  r.message = st.reason().c_str();
  if (st.ok() && w->output) {
    r.output = w->output->data();
    r.output_bytes = w->output->bytes();
    r.output_shape = w->output_shape.data();
    r.output_ndim = static_cast<int32_t>(w->output_shape.size());
  }
  r.received_splits = w->received_splits.data();
  r.num_received_splits = static_cast<int32_t>(w->received_splits.size());
  r.join_result = w->join_result;
  done(user, &r);
}

// Runs `done` when w completes (on the completing thread, or at once if it
// already has). The Work is kept alive by whoever completes it (the core's
// entry, or our caller when it is already complete), so a raw pointer
// suffices.
void Attach(const std::shared_ptr<Work>& w, hvda_core_done_fn done, void* user) {
  Work* raw = w.get();
  raw->OnComplete([raw, done, user](const Status& st) { Deliver(raw, st, done, user); });
}

Status ToArgs(const hvda_core_op& op, EnqueueArgs* a) {
  if (op.struct_size < offsetof(hvda_core_op, done_user) + sizeof(op.done_user))
    return Status::InvalidArgument("hvda_core_op from an incompatible caller (struct_size " +
                                   std::to_string(op.struct_size) + ")");
  if (op.name == nullptr) return Status::InvalidArgument("hvda_core_op without a name");
  if (op.done == nullptr)
    return Status::InvalidArgument("hvda_core_op '" + std::string(op.name) + "' without a done callback");
  Status dtype = CheckDtypeCode(op.dtype);  // the bindings' rule (enqueue_args.h)
  if (!dtype.ok())
    return Status::InvalidArgument("tensor '" + std::string(op.name) + "': " + dtype.reason());
  switch (op.type) {
    case HVDA_CORE_ALLREDUCE: a->type = RequestType::kAllreduce; break;
    case HVDA_CORE_ALLGATHER: a->type = RequestType::kAllgather; break;
    case HVDA_CORE_BROADCAST: a->type = RequestType::kBroadcast; break;
    case HVDA_CORE_ALLTOALL: a->type = RequestType::kAlltoall; break;
    case HVDA_CORE_REDUCESCATTER: a->type = RequestType::kReducescatter; break;
    default:
      return Status::InvalidArgument("tensor '" + std::string(op.name) + "': unknown op type " +
                                     std::to_string(op.type));
  }
  a->name = op.name;
  a->process_set_id = op.process_set_id;
  a->input = op.input;
  a->output = op.output;
  a->dtype = static_cast<DataType>(op.dtype);
  if (op.ndim > 0) a->shape.assign(op.shape, op.shape + op.ndim);
  a->device = -1;
  if (HVDA_CORE_HAS_FIELD(&op, hvda_core_op, allocate_user) && op.allocate_output != nullptr) {
    const hvda_core_alloc_fn alloc = op.allocate_output;
    void* const user = op.allocate_user;
    a->allocate_output = [alloc, user](const std::vector<int64_t>& shape, size_t bytes,
                                       void** data) {
      const char* message = nullptr;
      if (alloc(user, shape.data(), static_cast<int32_t>(shape.size()), bytes, data, &message) == 0)
        return Status::OK();
      return Status::Unknown(message != nullptr ? message : "the framework could not allocate the output");
    };
  }
  if (HVDA_CORE_HAS_FIELD(&op, hvda_core_op, stream) && op.device_type != nullptr) {
    if (op.output == nullptr && !a->allocate_output)
      return Status::InvalidArgument("tensor '" + std::string(op.name) + "': an accelerator op "
                                     "through the core C API needs a caller-allocated output, "
                                     "or allocate_output (core C API 1.2) for allgather and "
                                     "alltoall");
    a->device = op.device;
    a->device_type = op.device_type;
    a->stream = op.stream;
    if (HVDA_CORE_HAS_FIELD(&op, hvda_core_op, stream_framework) && op.stream_framework != nullptr)
      a->stream_framework = op.stream_framework;
  }
  a->op = static_cast<ReduceOp>(op.reduce_op);
  a->prescale = op.prescale;
  a->postscale = op.postscale;
  a->root_rank = op.root_rank;
  if (op.splits != nullptr && op.num_splits > 0) a->splits.assign(op.splits, op.splits + op.num_splits);
  return Status::OK();
}

// Validates and enqueues ops; *works receives one Work per op.
int32_t EnqueueWorks(hvda_core_runtime* rt, const hvda_core_op* ops, int32_t n,
                     std::vector<std::shared_ptr<Work>>* works, OpWaiter waiter) {
  if (rt == nullptr || ops == nullptr || n < 1)
    return Fail(StatusCode::kInvalidArgument, "enqueue: no runtime or no ops");
  std::vector<EnqueueArgs> args(n);
  for (int32_t i = 0; i < n; ++i) {
    Status st = ToArgs(ops[i], &args[i]);
    if (!st.ok()) return Fail(st);
    if (ops[i].process_set_id != ops[0].process_set_id)
      return Fail(StatusCode::kInvalidArgument,
                  "grouped op '" + args[i].name + "': every tensor of a group must use the same "
                  "process set");
  }
  Status st = AsRuntime(rt)->Enqueue(std::move(args), works, waiter);
  return st.ok() ? HVDA_CORE_OK : Fail(st);
}

int32_t Enqueue(hvda_core_runtime* rt, const hvda_core_op* ops, int32_t n) {
  try {
    std::vector<std::shared_ptr<Work>> works;
    // Nobody Waits on these Works: the enqueue asks for a cycle at once.
    int32_t rc = EnqueueWorks(rt, ops, n, &works, OpWaiter::kNobody);
    if (rc != HVDA_CORE_OK) return rc;
    for (int32_t i = 0; i < n; ++i) Attach(works[i], ops[i].done, ops[i].done_user);
    return HVDA_CORE_OK;
  } catch (const std::exception& e) {
    return Fail(StatusCode::kUnknown, std::string("enqueue failed: ") + e.what());
  }
}

int32_t EnqueueWait(hvda_core_runtime* rt, const hvda_core_op* ops, int32_t n) {
  std::vector<std::shared_ptr<Work>> works;
  try {
    int32_t rc = EnqueueWorks(rt, ops, n, &works, OpWaiter::kCaller);
    if (rc != HVDA_CORE_OK) return rc;
  } catch (const std::exception& e) {
    return Fail(StatusCode::kUnknown, std::string("enqueue failed: ") + e.what());
  }
  // Wait drives the cycles from this thread; it ends when the op completes,
  // which every failure path (a mismatch, a lost peer, shutdown, the
  // deadlock timeout) guarantees, so no deadline is needed here.
  for (const auto& w : works) w->Wait(-1.0);
  for (int32_t i = 0; i < n; ++i) Deliver(works[i].get(), works[i]->status(), ops[i].done, ops[i].done_user);
  return HVDA_CORE_OK;
}

// join and barrier: `make` creates the op's Work (OK or a failed call's
// code, with the message set). Then, when !wait, done is called from a core
// thread (nobody Waits, so the background thread is asked for a cycle); when
// wait, this thread drives the cycles and calls done once the Work completed,
// as enqueue_wait does.
template <typename Make>
int32_t EnqueueControl(hvda_core_runtime* rt, const char* what, hvda_core_done_fn done,
                       void* user, bool wait, Make make) {
  std::shared_ptr<Work> w;
  try {
    if (done == nullptr)
      return Fail(StatusCode::kInvalidArgument, std::string(what) + " without a done callback");
    int32_t rc = make(AsRuntime(rt), &w);
    if (rc != HVDA_CORE_OK) return rc;
    if (!wait) {
      Attach(w, done, user);
      AsRuntime(rt)->RequestProgress();
      return HVDA_CORE_OK;
    }
  } catch (const std::exception& e) {
    return Fail(StatusCode::kUnknown, std::string(what) + " failed: " + e.what());
  }
  w->Wait(-1.0);
  Deliver(w.get(), w->status(), done, user);
  return HVDA_CORE_OK;
}

int32_t EnqueueJoinAs(hvda_core_runtime* rt, int32_t device, hvda_core_done_fn done, void* user,
                      bool wait) {
  return EnqueueControl(rt, "join", done, user, wait, [device](Runtime* r, std::shared_ptr<Work>* w) {
    if (!r->initialized())
      return Fail(StatusCode::kInvalidArgument,
                  "Horovod has not been initialized; call hvd.init() first.");
    *w = r->EnqueueJoin(device);
    return static_cast<int32_t>(HVDA_CORE_OK);
  });
}

int32_t EnqueueBarrierAs(hvda_core_runtime* rt, int32_t ps, hvda_core_done_fn done, void* user,
                         bool wait) {
  return EnqueueControl(rt, "barrier", done, user, wait, [ps](Runtime* r, std::shared_ptr<Work>* w) {
    Status st = r->EnqueueBarrier(ps, w);
    return st.ok() ? static_cast<int32_t>(HVDA_CORE_OK) : Fail(st);
  });
}

int32_t EnqueueJoin(hvda_core_runtime* rt, int32_t device, hvda_core_done_fn done, void* user) {
  return EnqueueJoinAs(rt, device, done, user, false);
}
int32_t EnqueueJoinWait(hvda_core_runtime* rt, int32_t device, hvda_core_done_fn done,
                        void* user) {
  return EnqueueJoinAs(rt, device, done, user, true);
}
int32_t EnqueueBarrier(hvda_core_runtime* rt, int32_t ps, hvda_core_done_fn done, void* user) {
  return EnqueueBarrierAs(rt, ps, done, user, false);
}
int32_t EnqueueBarrierWait(hvda_core_runtime* rt, int32_t ps, hvda_core_done_fn done,
                           void* user) {
  return EnqueueBarrierAs(rt, ps, done, user, true);
}

int32_t Topology(hvda_core_runtime* rt, int32_t field, int32_t* out) {
  Runtime* r = AsRuntime(rt);
  if (r == nullptr)
    return Fail(StatusCode::kInvalidArgument, "Horovod has not been initialized; call hvd.init() first.");
  hvda::Topology t;
  Status st = r->GetTopology(&t);
  if (!st.ok()) return Fail(st);
  switch (field) {
    case HVDA_CORE_RANK: *out = t.rank; break;
    case HVDA_CORE_SIZE: *out = t.size; break;
    case HVDA_CORE_LOCAL_RANK: *out = t.local_rank; break;
    case HVDA_CORE_LOCAL_SIZE: *out = t.local_size; break;
    case HVDA_CORE_CROSS_RANK: *out = t.cross_rank; break;
    case HVDA_CORE_CROSS_SIZE: *out = t.cross_size; break;
    default: return Fail(StatusCode::kInvalidArgument, "unknown topology field " + std::to_string(field));
  }
  return HVDA_CORE_OK;
}

// The ranks of set `id` (global ranks, set order).
int32_t SetRanks(hvda_core_runtime* rt, int32_t id, std::vector<int>* ranks) {
  try {
    Runtime* r = AsRuntime(rt);
    if (r == nullptr || !r->initialized())
      return Fail(StatusCode::kInvalidArgument, "Horovod has not been initialized; call hvd.init() first.");
    Status st = r->ProcessSetRanks(id, ranks);
    return st.ok() ? HVDA_CORE_OK : Fail(st);
  } catch (const std::exception& e) {
    return Fail(StatusCode::kUnknown, e.what());
  }
}

int32_t SetRank(hvda_core_runtime* rt, int32_t id, int32_t* rank) {
  Runtime* r = AsRuntime(rt);
  if (r == nullptr)
    return Fail(StatusCode::kInvalidArgument, "Horovod has not been initialized; call hvd.init() first.");
  int set_rank = -1;
  Status st = r->ProcessSetRank(id, &set_rank);
  if (!st.ok()) return Fail(st);
  *rank = set_rank;
  return HVDA_CORE_OK;
}

int32_t SetIncluded(hvda_core_runtime* rt, int32_t id, int32_t* included) {
  int32_t rank = -1;
  int32_t rc = SetRank(rt, id, &rank);
  if (rc == HVDA_CORE_OK) *included = rank >= 0 ? 1 : 0;
  return rc;
}

int32_t SetSize(hvda_core_runtime* rt, int32_t id, int32_t* size) {
  std::vector<int> ranks;
  int32_t rc = SetRanks(rt, id, &ranks);
  if (rc == HVDA_CORE_OK) *size = static_cast<int32_t>(ranks.size());
  return rc;
}

const hvda_core_api_v1 kApi = {
    sizeof(hvda_core_api_v1), HVDA_CORE_API_MAJOR, HVDA_CORE_API_MINOR, &LastError, &Enqueue,
    &EnqueueJoin,             &EnqueueBarrier,     &Topology,           &SetIncluded, &SetRank,
    &SetSize,                 &EnqueueWait,        &EnqueueJoinWait,    &EnqueueBarrierWait,
};

}  // namespace

void BindCoreCApi(py::module_& m) {
  py::object cls = m.attr("Runtime");
  cls.attr("c_api") = py::cpp_function(
      [](Runtime& rt) {
        return py::make_tuple(reinterpret_cast<uintptr_t>(&kApi), reinterpret_cast<uintptr_t>(&rt));
      },
      py::is_method(cls), py::name("c_api"),
      py::doc("(address of the hvda_core_api_v1 table, address of this runtime) for framework "
              "kernels (csrc/include/horovod_accel/core_api.h). Both live as long as this "
              "Runtime object; keep it alive while a kernel may run."));
}

}  // namespace python
}  // namespace hvda
