// Registration entry points of the op library (register.cc calls them when
// TensorFlow loads the library).
#pragma once

#include "tf_c_api.h"

namespace hvda_tf {

// Op definitions and shape functions (op_defs.cc).
void RegisterOpDefs(TF_Status* status);
// Kernels of the collectives for `device_type` ("CPU" when TF loads the
// library; a PluggableDevice type through hvda_tf_register_device_kernels,
// device_kernels.cc): collectives writing into TF-allocated outputs
// (kernels_inplace.cc), collectives whose output size negotiation decides
// (kernels_gather.cc). Join/barrier/topology queries are CPU-only
// (kernels_control.cc).
void RegisterInplaceKernels(const char* device_type, TF_Status* status);
void RegisterGatherKernels(const char* device_type, TF_Status* status);
void RegisterControlKernels(TF_Status* status);

// Registers an async kernel for op_name on device_type over KernelConfig
// (CreateDeviceKernelConfig unless "CPU"). host_memory: the names of the
// op's inputs/outputs that stay in host memory on a device (the name input,
// splits), nullptr-terminated; may be null.
void RegisterAsyncKernel(const char* op_name, const char* device_type,
                         void (*compute)(void*, TF_OpKernelContext*, TF_AsyncOpKernelDoneCallback*),
                         const char* const* host_memory, TF_Status* status);

}  // namespace hvda_tf
