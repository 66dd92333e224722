// Collectives whose output size depends on the other ranks: allgather,
// grouped allgather, alltoall. The core allocates the result; on completion
// (the core's thread) the kernel allocates the TF output with the final
// shape and copies the result into it once. That copy is the one left on
// this path: core_api.h v1 lends the result buffer only for the duration of
// the callback. Going zero-copy would need the table to hand out a
// reference to it (retain/release), which TF_NewTensor with a deallocator
// plus TF_SetOutput could then adopt (HostBuffer is 64-byte aligned, as TF
// requires).
#include <cstring>
#include <string>
#include <vector>

#include "core_link.h"
#include "kernel_config.h"
#include "kernels.h"
#include "tf_c_api.h"

namespace hvda_tf {
namespace {

class GatherOp : public AsyncOp {
 public:
  using AsyncOp::AsyncOp;
  std::vector<TF_DataType> dtypes;
  bool alltoall = false;

 protected:
  // Output `index` <- the core's buffer; alltoall also sets output 1, the
  // rows received from each rank.
  void OnResult(int index, const hvda_core_result& r) override {
    if (!Copy(index, dtypes[index], r.output_shape, r.output_ndim, r.output, r.output_bytes)) return;
    if (!alltoall) return;
    std::vector<int32_t> splits(r.received_splits, r.received_splits + r.num_received_splits);
    int64_t n = static_cast<int64_t>(splits.size());
    Copy(1, TF_INT32, &n, 1, splits.data(), splits.size() * sizeof(int32_t));
  }

 private:
  bool Copy(int index, TF_DataType dtype, const int64_t* dims, int ndim, const void* data,
            size_t bytes) {
    ScopedStatus s;
    TF_Tensor* out = TF_AllocateOutput(ctx(), index, dtype, dims, ndim, bytes, s.get());
    if (!s.ok() || out == nullptr) {
      Fail(TF_RESOURCE_EXHAUSTED, "cannot allocate output " + std::to_string(index) + " (" +
                                      std::to_string(bytes) + " bytes): " + s.message());
      return false;
    }
    if (bytes > 0) std::memcpy(TF_TensorData(out), data, bytes);
    TF_DeleteTensor(out);  // the context holds the output
    return true;
  }
};

void Allgather(void* kernel, TF_OpKernelContext* ctx, TF_AsyncOpKernelDoneCallback* done,
               bool grouped) {
  const auto& k = *static_cast<KernelConfig*>(kernel);
  auto* op = new GatherOp(ctx, done, k.blocking);
  const int n = TF_NumInputs(ctx) - 1;
  std::string base;
  if (!CoreName(op, k, n, &base)) return op->Finish();
  std::vector<std::string> names(n);
  std::vector<std::vector<int64_t>> dims(n);
  std::vector<hvda_core_op> ops;
  for (int i = 0; i < n; ++i) {
    names[i] = grouped ? GroupName(base, i, n) : base;
    TF_Tensor* in = op->Input(i);
    if (in == nullptr || !CheckDtype(op, in, names[i])) return op->Finish();
    dims[i] = Dims(in);
    op->dtypes.push_back(TF_TensorType(in));
    ops.push_back(MakeOp(k, HVDA_CORE_ALLGATHER, names[i], in, dims[i]));
  }
  op->Submit(std::move(ops));
}

void AllgatherOne(void* k, TF_OpKernelContext* ctx, TF_AsyncOpKernelDoneCallback* done) {
  Allgather(k, ctx, done, false);
}
void GroupedAllgather(void* k, TF_OpKernelContext* ctx, TF_AsyncOpKernelDoneCallback* done) {
  Allgather(k, ctx, done, true);
}

// Inputs: tensor, splits (int32 vector; empty = equal split), tensor_name.
void Alltoall(void* kernel, TF_OpKernelContext* ctx, TF_AsyncOpKernelDoneCallback* done) {
  const auto& k = *static_cast<KernelConfig*>(kernel);
  auto* op = new GatherOp(ctx, done, k.blocking);
  op->alltoall = true;
  std::string name;
  if (!CoreName(op, k, 2, &name)) return op->Finish();
  TF_Tensor* in = op->Input(0);
  if (in == nullptr || !CheckDtype(op, in, name)) return op->Finish();
  TF_Tensor* splits_t = op->Input(1);
  if (splits_t == nullptr) return op->Finish();
  if (TF_TensorType(splits_t) != TF_INT32 || TF_NumDims(splits_t) > 1) {
    op->Fail(TF_INVALID_ARGUMENT, "alltoall splits of '" + name + "' must be an int32 vector");
    return op->Finish();
  }
  const int64_t ns = TF_TensorElementCount(splits_t);
  const auto* sp = static_cast<const int32_t*>(TF_TensorData(splits_t));
  std::vector<int64_t> splits(sp, sp + ns);
  std::vector<int64_t> dims = Dims(in);
  op->dtypes.push_back(TF_TensorType(in));
  hvda_core_op o = MakeOp(k, HVDA_CORE_ALLTOALL, name, in, dims);
  o.splits = splits.empty() ? nullptr : splits.data();
  o.num_splits = static_cast<int32_t>(splits.size());
  op->Submit(o);
}

}  // namespace

void RegisterGatherKernels(TF_Status* status) {
  RegisterAsyncKernel("HorovodAllgather", &AllgatherOne, status);
  RegisterAsyncKernel("HorovodGroupedAllgather", &GroupedAllgather, status);
  RegisterAsyncKernel("HorovodAlltoall", &Alltoall, status);
}

}  // namespace hvda_tf
