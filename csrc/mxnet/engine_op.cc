#include "engine_op.h"

#include <algorithm>

namespace hvda_mx {
namespace {

// Every op runs on MXNet's CPU-prioritized workers, as upstream's: its
// function only hands the tensors to the core and returns, and must not
// queue behind the compute kernels it should overlap with.
const Context kExecContext{kDevCPU, 0};
const int32_t kFnProperty = kFnPropertyCPUPrioritized;
const int32_t kReduceAdasum = 2;  // the core's reduce-op numbering (core_api.h)

const char* OpTypeName(int32_t type) {
  switch (type) {
    case HVDA_CORE_ALLREDUCE: return "horovod_allreduce";
    case HVDA_CORE_BROADCAST: return "horovod_broadcast";
    case HVDA_CORE_REDUCESCATTER: return "horovod_reducescatter";
    default: return nullptr;
  }
}

bool IsHostContext(int32_t dev_type) {
  return dev_type == kDevCPU || dev_type == kDevCPUPinned || dev_type == kDevCPUShared;
}

// dtype (mshadow flag), shape and a host-context check of one NDArray.
// `what` names it in messages ("tensor 'allreduce.w'").
bool Describe(const MxFunctions& mx, NDArrayHandle h, const std::string& what, int* flag,
              std::vector<int64_t>* shape, std::string* error) {
  if (h == nullptr) {
    *error = what + " is not an NDArray (null handle)";
    return false;
  }
  int ndim = 0;
  const int* dims = nullptr;
  int dev_type = 0, dev_id = 0;
  if (mx.MXNDArrayGetDType(h, flag) != 0 || mx.MXNDArrayGetShapeEx(h, &ndim, &dims) != 0 ||
      mx.MXNDArrayGetContext(h, &dev_type, &dev_id) != 0) {
    *error = what + ": " + MxLastError();
    return false;
  }
  if (*flag < 0) {
    *error = what + " has no data (an NDArray without shape or dtype)";
    return false;
  }
  if (!IsHostContext(dev_type)) {
    *error = what + " is on a GPU context (gpu(" + std::to_string(dev_id) +
             ")); horovod_accel's MXNet adapter reduces CPU NDArrays only "
             "(copy it with .as_in_context(mx.cpu()))";
    return false;
  }
  shape->assign(dims, dims + std::max(ndim, 0));
  return true;
}

// The host address of h's elements. Called on an engine worker while the
// engine holds h's dependency, so h is written and allocated: ToDLPack's
// data() allocates a delay-allocated output here, never concurrently with
// another operation on it. (MXNDArrayGetData is not used: for MKLDNN-layout
// data it waits on the engine for a reorder, which would wait for this very
// operation.)
bool DataPointer(const MxFunctions& mx, NDArrayHandle h, void** out, std::string* error) {
  void* raw = nullptr;
  if (mx.MXNDArrayToDLPack(h, &raw) != 0) {
    *error = MxLastError();
    return false;
  }
  auto* dl = static_cast<DLManagedTensor*>(raw);
  *out = static_cast<char*>(dl->dl_tensor.data) + dl->dl_tensor.byte_offset;
  // The view holds one more reference to the chunk; ours keeps it alive.
  if (dl->deleter != nullptr) dl->deleter(dl);
  return true;
}

}  // namespace

EngineOp::~EngineOp() {
  const MxFunctions* mx = Mx();
  for (NDArrayHandle h : inputs_) mx->MXNDArrayFree(h);
  for (NDArrayHandle h : outputs_) mx->MXNDArrayFree(h);
}

std::unique_ptr<EngineOp> EngineOp::Create(const OpParams& params, int32_t n,
                                           NDArrayHandle const* inputs,
                                           NDArrayHandle const* outputs,
                                           const char* const* names, std::string* error) {
  const MxFunctions* mx = Mx();
  if (mx == nullptr || CoreApi() == nullptr) {
    *error = "the horovod_accel MXNet engine library is not connected to the core; import it "
             "through horovod.mxnet, which does that";
    return nullptr;
  }
  if (OpTypeName(params.type) == nullptr || n < 1 || inputs == nullptr || names == nullptr) {
    *error = "hvda_mx_push: bad op type " + std::to_string(params.type) + " or no tensors";
    return nullptr;
  }
  std::unique_ptr<EngineOp> op(new EngineOp());
  op->params_ = params;
  op->epoch_ = Epoch();
  op->in_place_ = outputs == nullptr;
  for (int32_t i = 0; i < n; ++i) {
    std::string name = names[i] != nullptr ? names[i] : "";
    std::string what = "tensor '" + name + "'";
    int flag = -1;
    std::vector<int64_t> shape;
    if (!Describe(*mx, inputs[i], what, &flag, &shape, error)) return nullptr;
    int32_t dtype = CoreDtype(flag);
    if (dtype < 0) {
      *error = what + " has dtype " + MshadowTypeName(flag) +
               ", which Horovod does not support; use uint8, int8, int16, uint16, int32, "
               "int64, float16, bfloat16, float32, float64 or bool";
      return nullptr;
    }
    if (dtype == 9 && params.type != HVDA_CORE_BROADCAST) {  // the core reduces no bool
      *error = what + " is a bool NDArray, which Horovod cannot reduce; convert it to an "
               "integer dtype first (e.g. .astype('uint8'))";
      return nullptr;
    }
    const bool floating = dtype == 5 || dtype == 6 || dtype == 7 || dtype == 8;
    if (params.reduce_op == kReduceAdasum && params.type == HVDA_CORE_ALLREDUCE && !floating) {
      *error = what + " has dtype " + MshadowTypeName(flag) + "; Adasum needs a floating-point "
               "tensor (float16, bfloat16, float32 or float64): convert it or use op=hvd.Sum";
      return nullptr;
    }
    if (!op->in_place_) {
      int out_flag = -1;
      std::vector<int64_t> out_shape;
      if (!Describe(*mx, outputs[i], what + " (output)", &out_flag, &out_shape, error))
        return nullptr;
      bool shape_must_match = params.type != HVDA_CORE_REDUCESCATTER;
      if (out_flag != flag || (shape_must_match && out_shape != shape)) {
        *error = what + ": the output NDArray's dtype or shape differs from the input's";
        return nullptr;
      }
    }
    for (int32_t j = 0; j < i; ++j) {
      if (inputs[j] == inputs[i] && op->in_place_) {
        *error = what + " is the same NDArray as tensor '" + op->names_[j] +
                 "' of this group; an in-place group must not list an NDArray twice";
        return nullptr;
      }
    }
    NDArrayHandle in_copy = nullptr;
    if (mx->MXShallowCopyNDArray(inputs[i], &in_copy) != 0) {
      *error = what + ": " + MxLastError();
      return nullptr;
    }
    op->inputs_.push_back(in_copy);
    if (!op->in_place_) {
      NDArrayHandle out_copy = nullptr;
      if (mx->MXShallowCopyNDArray(outputs[i], &out_copy) != 0) {
        *error = what + " (output): " + MxLastError();
        return nullptr;
      }
      op->outputs_.push_back(out_copy);
    }
    op->names_.push_back(std::move(name));
    op->dtypes_.push_back(dtype);
    op->shapes_.push_back(std::move(shape));
  }
  return op;
}

bool EngineOp::Push(std::unique_ptr<EngineOp> op, int32_t priority, NDArrayHandle order_after,
                    std::string* error) {
  const MxFunctions* mx = Mx();
  // Reads: the inputs (a variable listed twice among reads is harmless to
  // the engine). Writes: the outputs, or the inputs when in place; Create()
  // refused an in-place group naming one NDArray twice, which the engine
  // would wait on forever (two views of one NDArray are not detectable
  // here and hang as upstream's do).
  std::vector<NDArrayHandle> reads;
  std::vector<NDArrayHandle> writes = op->in_place_ ? op->inputs_ : op->outputs_;
  if (!op->in_place_) reads = op->inputs_;
  if (order_after != nullptr) writes.push_back(order_after);
  const char* opr_name = OpTypeName(op->params_.type);
  std::string first_name = op->names_[0];
  // From this call on the op is MXNet's: its deleter frees it, also when the
  // push fails (MXEnginePushAsync wraps it in a shared_ptr before pushing).
  EngineOp* raw = op.release();
  int rc = mx->MXEnginePushAsyncND(&EngineOp::RunStatic, raw, &EngineOp::DeleteStatic,
                                   &kExecContext, reads.data(), static_cast<int>(reads.size()),
                                   writes.data(), static_cast<int>(writes.size()), &kFnProperty,
                                   priority, opr_name, false);
  if (rc != 0) {
    *error = "tensor '" + first_name + "': MXNet refused the engine operation: " + MxLastError();
    return false;
  }
  return true;
}

void EngineOp::RunStatic(void* /*run_ctx*/, void* on_complete, void* param) {
  static_cast<EngineOp*>(param)->Run(*static_cast<const CallbackOnComplete*>(on_complete));
}

void EngineOp::DeleteStatic(void* param) { delete static_cast<EngineOp*>(param); }

void EngineOp::Run(const CallbackOnComplete& on_complete) {
  on_complete_ = on_complete;
  if (epoch_ != Epoch()) {
    RecordError("tensor '" + names_[0] + "' was pushed before hvd.shutdown() and its inputs "
                "were written only afterwards; it belongs to the ended job and was not "
                "submitted");
    Complete();
    return;
  }
  const MxFunctions& mx = *Mx();
  const size_t n = names_.size();
  std::vector<hvda_core_op> ops(n);
  for (size_t i = 0; i < n; ++i) {
    void* in = nullptr;
    void* out = nullptr;
    std::string err;
    if (!DataPointer(mx, inputs_[i], &in, &err) ||
        (in_place_ ? (out = in, false) : !DataPointer(mx, outputs_[i], &out, &err))) {
      RecordError("tensor '" + names_[i] + "': " + err);
      Complete();
      return;
    }
    hvda_core_op& op = ops[i];
    op.struct_size = sizeof(hvda_core_op);
    op.type = params_.type;
    op.name = names_[i].c_str();
    op.process_set_id = params_.process_set_id;
    op.input = in;
    op.output = out;
    op.dtype = dtypes_[i];
    op.shape = shapes_[i].data();
    op.ndim = static_cast<int32_t>(shapes_[i].size());
    op.reduce_op = params_.reduce_op;
    op.prescale = params_.prescale;
    op.postscale = params_.postscale;
    op.root_rank = params_.root_rank;
    op.done = &EngineOp::OnDone;
    op.done_user = this;
  }
  pending_.store(static_cast<int32_t>(n), std::memory_order_relaxed);
  const hvda_core_api_v1* api = CoreApi();
  int32_t st = api->enqueue(CoreRuntime(), ops.data(), static_cast<int32_t>(n));
  // On success `this` may already be gone (the core can complete every op
  // inside enqueue when the runtime has failed): touch nothing after it.
  if (st != HVDA_CORE_OK) {
    RecordError(std::string(api->last_error()));
    Complete();
  }
}

void EngineOp::OnDone(void* user, const hvda_core_result* result) {
  auto* op = static_cast<EngineOp*>(user);
  if (result->status != HVDA_CORE_OK) op->RecordError(result->message);
  if (op->pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) op->Complete();
}

void EngineOp::RecordError(const std::string& message) {
  std::lock_guard<std::mutex> lock(error_mu_);
  if (error_.empty()) error_ = message.empty() ? std::string("unknown error") : message;
}

void EngineOp::Complete() {
  CallbackOnComplete cb = on_complete_;
  std::string error;
  {
    std::lock_guard<std::mutex> lock(error_mu_);
    error = error_;
  }
  if (error.empty()) {
    cb.callback(cb.engine, cb.param, nullptr);  // deletes `this`
    return;
  }
  EngineError e("Horovod " + std::string(OpTypeName(params_.type)) + " failed: " + error);
  cb.callback(cb.engine, cb.param, &e);  // deletes `this`; e is copied by the engine
}

}  // namespace hvda_mx
