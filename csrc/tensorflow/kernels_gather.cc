// Collectives whose output size depends on the other ranks: allgather,
// grouped allgather, alltoall. The core asks for the output once negotiation
// has fixed its shape (hvda_core_op.allocate_output, core C API 1.2, on a
// core thread), the kernel allocates it with TF_AllocateOutput - host memory,
// or device memory on a PluggableDevice - and the collective writes straight
// into it: no copy in the adapter. Alltoall's received splits (a host int32
// output) are set on completion.
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "core_link.h"
#include "device_placement.h"
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

  // Fills o's allocate_output for output `index`. Call for every op before
  // Submit (the slots must not move afterwards).
  void LendOutputs(std::vector<hvda_core_op>* ops) {
    slots_.resize(ops->size());
    for (size_t i = 0; i < ops->size(); ++i) {
      slots_[i] = Slot{this, static_cast<int>(i)};
      (*ops)[i].allocate_output = &GatherOp::AllocateOutput;
      (*ops)[i].allocate_user = &slots_[i];
    }
  }

 protected:
  // Alltoall: output 1, the rows received from each rank.
  void OnResult(int, const hvda_core_result& r) override {
    if (!alltoall) return;
    std::vector<int32_t> splits(r.received_splits, r.received_splits + r.num_received_splits);
    const int64_t n = static_cast<int64_t>(splits.size());
    const size_t bytes = splits.size() * sizeof(int32_t);
    ScopedStatus s;
    TF_Tensor* out = TF_AllocateOutput(ctx(), 1, TF_INT32, &n, 1, bytes, s.get());
    if (!s.ok() || out == nullptr) {
      Fail(TF_RESOURCE_EXHAUSTED, "cannot allocate the received_splits output: " + s.message());
      return;
    }
    if (bytes > 0) std::memcpy(TF_TensorData(out), splits.data(), bytes);
    TF_DeleteTensor(out);  // the context holds the output
  }

 private:
  struct Slot {
    GatherOp* op;
    int index;
  };

  // hvda_core_alloc_fn. Core threads may ask for several outputs of one
  // group at once: one at a time into TF's context.
  static int32_t AllocateOutput(void* user, const int64_t* shape, int32_t ndim, size_t bytes,
                                void** data, const char** message) {
    auto* slot = static_cast<Slot*>(user);
    GatherOp* op = slot->op;
    std::lock_guard<std::mutex> lock(op->alloc_mu_);
    ScopedStatus s;
    TF_Tensor* out = TF_AllocateOutput(op->ctx(), slot->index, op->dtypes[slot->index], shape,
                                       ndim, bytes, s.get());
    if (!s.ok() || out == nullptr) {
      op->alloc_error_ = "cannot allocate output " + std::to_string(slot->index) + " (" +
                         std::to_string(bytes) + " bytes): " + s.message();
      *message = op->alloc_error_.c_str();
      return 1;
    }
    *data = TF_TensorData(out);
    op->Keep(out);
    return 0;
  }
  std::vector<Slot> slots_;
  std::mutex alloc_mu_;
  std::string alloc_error_;  // the message of a failed allocation; lives until done
};

void Allgather(void* kernel, TF_OpKernelContext* ctx, TF_AsyncOpKernelDoneCallback* done,
               bool grouped) {
  const auto& k = *static_cast<KernelConfig*>(kernel);
  auto* op = new GatherOp(ctx, done, k.blocking);
  const int n = TF_NumInputs(ctx) - 1;
  std::string base;
  if (!CoreName(op, k, n, &base)) return op->Finish();
  DevicePlacement place;  // outlives the Submit() below, which copies it
  if (k.on_device && !PlaceOnDevice(op, &place)) return op->Finish();
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
    if (k.on_device) ApplyPlacement(place, &ops.back());
  }
  op->LendOutputs(&ops);
  op->Submit(std::move(ops));
}

void AllgatherOne(void* k, TF_OpKernelContext* ctx, TF_AsyncOpKernelDoneCallback* done) {
  Allgather(k, ctx, done, false);
}
void GroupedAllgather(void* k, TF_OpKernelContext* ctx, TF_AsyncOpKernelDoneCallback* done) {
  Allgather(k, ctx, done, true);
}

// Inputs: tensor, splits (int32 vector in host memory; empty = equal split),
// tensor_name.
void Alltoall(void* kernel, TF_OpKernelContext* ctx, TF_AsyncOpKernelDoneCallback* done) {
  const auto& k = *static_cast<KernelConfig*>(kernel);
  auto* op = new GatherOp(ctx, done, k.blocking);
  op->alltoall = true;
  std::string name;
  if (!CoreName(op, k, 2, &name)) return op->Finish();
  DevicePlacement place;
  if (k.on_device && !PlaceOnDevice(op, &place)) return op->Finish();
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
  std::vector<hvda_core_op> ops{MakeOp(k, HVDA_CORE_ALLTOALL, name, in, dims)};
  ops[0].splits = splits.empty() ? nullptr : splits.data();
  ops[0].num_splits = static_cast<int32_t>(splits.size());
  if (k.on_device) ApplyPlacement(place, &ops[0]);
  op->LendOutputs(&ops);
  op->Submit(std::move(ops));
}

}  // namespace

void RegisterGatherKernels(const char* device_type, TF_Status* status) {
  static const char* const kHost[] = {"tensor_name", nullptr};
  static const char* const kAlltoallHost[] = {"tensor_name", "splits", "received_splits",
                                              nullptr};
  RegisterAsyncKernel("HorovodAllgather", device_type, &AllgatherOne, kHost, status);
  RegisterAsyncKernel("HorovodGroupedAllgather", device_type, &GroupedAllgather, kHost, status);
  RegisterAsyncKernel("HorovodAlltoall", device_type, &Alltoall, kAlltoallHost, status);
}

}  // namespace hvda_tf
