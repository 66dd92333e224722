// AssignAddVariableOp / AssignSubVariableOp for a float32 GCU variable
// (`var.assign_add(x)`, `var.assign_sub(x)`): registered only to FAIL with a
// clear error. Without a GCU kernel TF soft-places these ops on the CPU,
// whose kernel then updates the variable's buffer - GCU memory - from the
// host: a SIGSEGV under the emulation, silent corruption on real hardware.
// Doing the update needs the variable behind the resource handle, which only
// TF_AssignUpdateVariable (kernels_experimental.h) reaches, and TF's pip
// wheels do not export it. `var.assign(var - x)` works: AssignVariableOp
// has a DEVICE_DEFAULT kernel and Sub runs on the GCU.
#include <string>

#include "kernel_util.h"

namespace hvda_tf_gcu {
namespace {

template <const char* kOp>
void Refuse(void* /*kernel*/, TF_OpKernelContext* ctx) {
  Fail(ctx, TF_UNIMPLEMENTED,
       std::string("GCU: ") + kOp +
           " is not supported on a GCU variable (the emulated plugin cannot reach the variable"
           " through TF's C API); use var.assign(var + x) / var.assign(var - x)");
}

constexpr char kAssignAdd[] = "AssignAddVariableOp";
constexpr char kAssignSub[] = "AssignSubVariableOp";

}  // namespace

void RegisterVariableKernels() {
  RegisterFloatKernel(kAssignAdd, "dtype", "resource", nullptr, Refuse<kAssignAdd>, nullptr);
  RegisterFloatKernel(kAssignSub, "dtype", "resource", nullptr, Refuse<kAssignSub>, nullptr);
}

}  // namespace hvda_tf_gcu
