// TF_InitKernel: registers the GCU's float32 compute kernels (MatMul,
// AddV2, Sub, Mul), the refusing AssignAdd/SubVariableOp kernels
// (variable_kernels.cc) and the helpers they share (kernel_util.h). Every other op runs on the CPU (soft
// placement) or through TF's DEVICE_DEFAULT kernels (Identity, Const,
// VarHandleOp, ReadVariableOp, AssignVariableOp, ...).
#include <cstdio>
#include <string>
#include <vector>

#include "emu_core.h"
#include "gcu_plugin.h"
#include "kernel_util.h"

namespace hvda_tf_gcu {

void Fail(TF_OpKernelContext* ctx, TF_Code code, const std::string& message) {
  TF_Status* status = TF_NewStatus();
  TF_SetStatus(status, code, message.c_str());
  TF_OpKernelContext_Failure(ctx, status);
  TF_DeleteStatus(status);
}

bool Check(TF_OpKernelContext* ctx, TF_Status* status) {
  if (TF_GetCode(status) == TF_OK) return true;
  TF_OpKernelContext_Failure(ctx, status);
  return false;
}

void LaunchRaw(TF_OpKernelContext* ctx, KernelRun run, void* kernel, void (*destroy)(void*),
               std::initializer_list<const TF_Tensor*> tensors) {
  std::vector<const void*> ptrs;
  std::vector<size_t> sizes;
  for (const TF_Tensor* t : tensors) {
    ptrs.push_back(TF_TensorData(t));
    sizes.push_back(TF_TensorByteSize(t));
  }
  TF_Status* status = TF_NewStatus();
  SP_Stream stream = TF_GetStream(ctx, status);
  if (TF_GetCode(status) == TF_OK && stream == nullptr) {
    TF_SetStatus(status, TF_INTERNAL, "GCU kernel: TF_GetStream gave no stream");
  }
  if (TF_GetCode(status) == TF_OK) {
    const int rc = hvda_emu::RtLaunchKernel(stream->stream, run, kernel, ptrs.data(),
                                            sizes.data(), static_cast<int>(ptrs.size()));
    if (rc == 0) kernel = nullptr;  // the stream owns it now
    TopsOk(rc, "kernel launch (hvda_emu::RtLaunchKernel)", status);
  }
  if (kernel != nullptr) destroy(kernel);
  Check(ctx, status);
  TF_DeleteStatus(status);
}

void RegisterFloatKernel(const char* op, const char* type_attr, const char* host_memory_arg,
                         void* (*create)(TF_OpKernelConstruction*),
                         void (*compute)(void*, TF_OpKernelContext*), void (*destroy)(void*)) {
  TF_Status* status = TF_NewStatus();
  TF_KernelBuilder* builder = TF_NewKernelBuilder(op, "GCU", create, compute, destroy);
  TF_KernelBuilder_TypeConstraint(builder, type_attr, TF_FLOAT, status);
  if (host_memory_arg != nullptr) TF_KernelBuilder_HostMemory(builder, host_memory_arg);
  if (TF_GetCode(status) == TF_OK) {
    const std::string name = std::string("HvdaEmuGcu") + op;
    TF_RegisterKernelBuilder(name.c_str(), builder, status);  // takes the builder
  } else {
    TF_DeleteKernelBuilder(builder);
  }
  if (TF_GetCode(status) != TF_OK) {
    std::fprintf(stderr, "hvda_emu_tf_gcu: registering %s for GCU failed: %s\n", op,
                 TF_Message(status));
  }
  TF_DeleteStatus(status);
}

}  // namespace hvda_tf_gcu

extern "C" __attribute__((visibility("default"))) void TF_InitKernel() {
  hvda_tf_gcu::RegisterMatMulKernel();
  hvda_tf_gcu::RegisterBinaryKernels();
  hvda_tf_gcu::RegisterVariableKernels();
}
