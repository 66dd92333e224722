// Collectives whose output shape is known before communication: allreduce,
// grouped allreduce, broadcast, reducescatter, grouped reducescatter. The
// output is allocated by TensorFlow (forwarding the input buffer when TF
// allows), and the core reads the input and writes the output in place: no
// copy in the adapter. On a PluggableDevice both are device memory, ordered
// on TF's stream (device_placement.h).
#include <string>
#include <vector>

#include "core_link.h"
#include "device_placement.h"
#include "kernel_config.h"
#include "kernels.h"
#include "tf_c_api.h"

namespace hvda_tf {
namespace {

// Output `index` for input `index` with `dims`: the input's own buffer when
// TF can forward it (allreduce / broadcast), else a new one. Null on error.
TF_Tensor* Output(AsyncOp* op, int index, const std::vector<int64_t>& dims, bool forward,
                  TF_DataType dtype) {
  ScopedStatus s;
  TF_Tensor* out;
  if (forward) {
    int forwarded = -1;
    out = TF_ForwardInputOrAllocateOutput(op->ctx(), &index, 1, index, dims.data(),
                                          static_cast<int>(dims.size()), &forwarded, s.get());
  } else {
    size_t bytes = static_cast<size_t>(NumElements(dims)) * TF_DataTypeSize(dtype);
    out = TF_AllocateOutput(op->ctx(), index, dtype, dims.data(), static_cast<int>(dims.size()),
                            bytes, s.get());
  }
  if (!s.ok() || out == nullptr) {
    op->Fail(TF_RESOURCE_EXHAUSTED, "cannot allocate output " + std::to_string(index) + ": " + s.message());
    return nullptr;
  }
  op->Keep(out);
  return out;
}

// Rows of this rank's reducescatter output for a first dimension d0:
// d0 / n, plus one for set ranks below d0 % n. -1 when this rank is not in
// the set (the core's enqueue then reports it).
int64_t ScatterRows(int32_t process_set_id, int64_t d0) {
  int32_t rank = -1, size = 0;
  if (CoreApi()->process_set_rank(CoreRuntime(), process_set_id, &rank) != HVDA_CORE_OK || rank < 0)
    return -1;
  if (CoreApi()->process_set_size(CoreRuntime(), process_set_id, &size) != HVDA_CORE_OK || size <= 0)
    return -1;
  return d0 / size + (rank < d0 % size ? 1 : 0);
}

// Shared body: n tensors (inputs 0..n-1, the name input last) -> outputs
// 0..n-1 with the same dtype; `grouped` names them as a group.
void Run(void* kernel, TF_OpKernelContext* ctx, TF_AsyncOpKernelDoneCallback* done,
         int32_t type, bool grouped) {
  const auto& k = *static_cast<KernelConfig*>(kernel);
  auto* op = new AsyncOp(ctx, done, k.blocking);
  const int n = TF_NumInputs(ctx) - 1;
  std::string base;
  if (!CoreName(op, k, n, &base)) return op->Finish();
  if (type == HVDA_CORE_REDUCESCATTER && CoreApi() == nullptr) {
    op->Fail(TF_FAILED_PRECONDITION, LinkError());
    return op->Finish();
  }
  DevicePlacement place;  // outlives the Submit() below, which copies it
  if (k.on_device && !PlaceOnDevice(op, &place)) return op->Finish();
  std::vector<std::string> names(n);
  std::vector<std::vector<int64_t>> in_dims(n);
  std::vector<hvda_core_op> ops;
  const bool forward = type != HVDA_CORE_REDUCESCATTER;
  for (int i = 0; i < n; ++i) {
    names[i] = grouped ? GroupName(base, i, n) : base;
    // Forward before reading the input: our own reference would pin it.
    TF_DataType dtype = TF_InputDatatype(ctx, i);
    TF_Tensor* out = nullptr;
    if (forward) {
      // Dims of the input are needed first; TF_GetInput gives them, so read,
      // drop, then forward.
      TF_Tensor* probe = nullptr;
      ScopedStatus s;
      TF_GetInput(ctx, i, &probe, s.get());
      if (!s.ok() || probe == nullptr) {
        op->Fail(TF_INTERNAL, "cannot read input " + std::to_string(i));
        return op->Finish();
      }
      in_dims[i] = Dims(probe);
      TF_DeleteTensor(probe);
      out = Output(op, i, in_dims[i], true, dtype);
    }
    TF_Tensor* in = op->Input(i);
    if (in == nullptr || !CheckDtype(op, in, names[i])) return op->Finish();
    if (!forward) {
      in_dims[i] = Dims(in);
      std::vector<int64_t> out_dims = in_dims[i];
      if (!out_dims.empty()) {
        int64_t rows = ScatterRows(k.process_set_id, out_dims[0]);
        out_dims[0] = rows < 0 ? 0 : rows;
      }
      out = Output(op, i, out_dims, false, dtype);
    }
    if (out == nullptr) return op->Finish();
    hvda_core_op o = MakeOp(k, type, names[i], in, in_dims[i]);
    o.output = TF_TensorData(out);
    if (k.on_device) ApplyPlacement(place, &o);
    ops.push_back(o);
  }
  op->Submit(std::move(ops));
}

void Allreduce(void* k, TF_OpKernelContext* ctx, TF_AsyncOpKernelDoneCallback* done) {
  Run(k, ctx, done, HVDA_CORE_ALLREDUCE, false);
}
void GroupedAllreduce(void* k, TF_OpKernelContext* ctx, TF_AsyncOpKernelDoneCallback* done) {
  Run(k, ctx, done, HVDA_CORE_ALLREDUCE, true);
}
void Broadcast(void* k, TF_OpKernelContext* ctx, TF_AsyncOpKernelDoneCallback* done) {
  Run(k, ctx, done, HVDA_CORE_BROADCAST, false);
}
void Reducescatter(void* k, TF_OpKernelContext* ctx, TF_AsyncOpKernelDoneCallback* done) {
  Run(k, ctx, done, HVDA_CORE_REDUCESCATTER, false);
}
void GroupedReducescatter(void* k, TF_OpKernelContext* ctx, TF_AsyncOpKernelDoneCallback* done) {
  Run(k, ctx, done, HVDA_CORE_REDUCESCATTER, true);
}

}  // namespace

void RegisterInplaceKernels(const char* device_type, TF_Status* status) {
  static const char* const kHost[] = {"tensor_name", nullptr};
  RegisterAsyncKernel("HorovodAllreduce", device_type, &Allreduce, kHost, status);
  RegisterAsyncKernel("HorovodGroupedAllreduce", device_type, &GroupedAllreduce, kHost, status);
  RegisterAsyncKernel("HorovodBroadcast", device_type, &Broadcast, kHost, status);
  RegisterAsyncKernel("HorovodReducescatter", device_type, &Reducescatter, kHost, status);
  RegisterAsyncKernel("HorovodGroupedReducescatter", device_type, &GroupedReducescatter, kHost,
                      status);
}

}  // namespace hvda_tf
