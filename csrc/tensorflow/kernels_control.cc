// join, barrier (async) and the topology queries size/local_size/rank/
// local_rank/process_set_included (synchronous, read at run time so a graph
// built before hvd.init() still answers correctly).
#include <string>

#include "core_link.h"
#include "kernel_config.h"
#include "kernels.h"
#include "tf_c_api.h"

namespace hvda_tf {
namespace {

void SetScalar(TF_OpKernelContext* ctx, int32_t value) {
  ScopedStatus s;
  TF_Tensor* out = TF_AllocateOutput(ctx, 0, TF_INT32, nullptr, 0, sizeof(int32_t), s.get());
  if (!s.ok() || out == nullptr) {
    SetFailure(ctx, TF_RESOURCE_EXHAUSTED, "cannot allocate a scalar output: " + s.message());
    return;
  }
  *static_cast<int32_t*>(TF_TensorData(out)) = value;
  TF_DeleteTensor(out);
}

class JoinOp : public AsyncOp {
 public:
  using AsyncOp::AsyncOp;

 protected:
  void OnResult(int, const hvda_core_result& r) override { SetScalar(ctx(), r.join_result); }
};

void Join(void* kernel, TF_OpKernelContext* ctx, TF_AsyncOpKernelDoneCallback* done) {
  (new JoinOp(ctx, done, static_cast<KernelConfig*>(kernel)->blocking))->SubmitJoin();
}

void Barrier(void* kernel, TF_OpKernelContext* ctx, TF_AsyncOpKernelDoneCallback* done) {
  const auto& k = *static_cast<KernelConfig*>(kernel);
  (new AsyncOp(ctx, done, k.blocking))->SubmitBarrier(k.process_set_id);
}

// One query: fails the op with the core's message when it fails.
void Query(TF_OpKernelContext* ctx, int32_t (*fn)(hvda_core_runtime*, int32_t, int32_t*),
           int32_t arg) {
  const hvda_core_api_v1* api = CoreApi();
  if (api == nullptr) return SetFailure(ctx, TF_FAILED_PRECONDITION, LinkError());
  int32_t value = 0;
  int32_t rc = fn(CoreRuntime(), arg, &value);
  if (rc != HVDA_CORE_OK) return SetFailure(ctx, TfCode(rc), api->last_error());
  SetScalar(ctx, value);
}

int32_t Topo(hvda_core_runtime* rt, int32_t field, int32_t* out) {
  return CoreApi()->topology(rt, field, out);
}
int32_t SetSize(hvda_core_runtime* rt, int32_t id, int32_t* out) {
  return CoreApi()->process_set_size(rt, id, out);
}
int32_t SetIncluded(hvda_core_runtime* rt, int32_t id, int32_t* out) {
  return CoreApi()->process_set_included(rt, id, out);
}

void Size(void* k, TF_OpKernelContext* ctx) {
  Query(ctx, &SetSize, static_cast<KernelConfig*>(k)->process_set_id);
}
void LocalSize(void*, TF_OpKernelContext* ctx) { Query(ctx, &Topo, HVDA_CORE_LOCAL_SIZE); }
void Rank(void*, TF_OpKernelContext* ctx) { Query(ctx, &Topo, HVDA_CORE_RANK); }
void LocalRank(void*, TF_OpKernelContext* ctx) { Query(ctx, &Topo, HVDA_CORE_LOCAL_RANK); }
void Included(void* k, TF_OpKernelContext* ctx) {
  Query(ctx, &SetIncluded, static_cast<KernelConfig*>(k)->process_set_id);
}

void RegisterSync(const char* op_name, void (*compute)(void*, TF_OpKernelContext*),
                  TF_Status* status) {
  if (TF_GetCode(status) != TF_OK) return;
  TF_KernelBuilder* b =
      TF_NewKernelBuilder(op_name, "CPU", &CreateKernelConfig, compute, &DeleteKernelConfig);
  TF_RegisterKernelBuilder((std::string(op_name) + "Op").c_str(), b, status);
}

}  // namespace

void RegisterAsyncKernel(const char* op_name, const char* device_type,
                         void (*compute)(void*, TF_OpKernelContext*, TF_AsyncOpKernelDoneCallback*),
                         const char* const* host_memory, TF_Status* status) {
  if (TF_GetCode(status) != TF_OK) return;
  const bool cpu = std::string(device_type) == "CPU";
  TF_KernelBuilder* b = TF_NewAsyncKernelBuilder(
      op_name, device_type, cpu ? &CreateKernelConfig : &CreateDeviceKernelConfig, compute,
      &DeleteKernelConfig);
  for (const char* const* arg = host_memory; !cpu && arg != nullptr && *arg != nullptr; ++arg)
    TF_KernelBuilder_HostMemory(b, *arg);
  TF_RegisterKernelBuilder((std::string(op_name) + "Op").c_str(), b, status);
}

void RegisterControlKernels(TF_Status* status) {
  RegisterAsyncKernel("HorovodJoin", "CPU", &Join, nullptr, status);
  RegisterAsyncKernel("HorovodBarrier", "CPU", &Barrier, nullptr, status);
  RegisterSync("HorovodSize", &Size, status);
  RegisterSync("HorovodLocalSize", &LocalSize, status);
  RegisterSync("HorovodRank", &Rank, status);
  RegisterSync("HorovodLocalRank", &LocalRank, status);
  RegisterSync("HorovodProcessSetIncluded", &Included, status);
}

}  // namespace hvda_tf
