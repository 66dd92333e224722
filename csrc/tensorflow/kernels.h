// Registration entry points of the op library (register.cc calls them when
// TensorFlow loads the library).
#pragma once

#include "tf_c_api.h"

namespace hvda_tf {

// Op definitions and shape functions (op_defs.cc).
void RegisterOpDefs(TF_Status* status);
// CPU kernels: collectives writing into TF-allocated outputs
// (kernels_inplace.cc), collectives with core-allocated outputs
// (kernels_gather.cc), join/barrier/topology queries (kernels_control.cc).
void RegisterInplaceKernels(TF_Status* status);
void RegisterGatherKernels(TF_Status* status);
void RegisterControlKernels(TF_Status* status);

// Registers an async CPU kernel for op_name over KernelConfig.
void RegisterAsyncKernel(const char* op_name,
                         void (*compute)(void*, TF_OpKernelContext*, TF_AsyncOpKernelDoneCallback*),
                         TF_Status* status);

}  // namespace hvda_tf
