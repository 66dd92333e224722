// What a Horovod kernel instance knows from its node: attributes and node
// name, read once at kernel construction (one instance per graph node, or per
// eager kernel-cache entry). Plus the helpers every collective kernel uses to
// name its core tensors and describe its core ops.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "async_op.h"
#include "horovod_accel/core_api.h"
#include "tf_c_api.h"

namespace hvda_tf {

struct KernelConfig {
  std::string node_name;  // the TF node name (graph mode's core tensor name)
  bool ignore_name_scope = false;
  int32_t process_set_id = 0;
  int32_t reduce_op = 1;  // Sum
  double prescale = 1.0;
  double postscale = 1.0;
  int32_t root_rank = 0;
  // Registered for a PluggableDevice (device_kernels.cc): tensors are device
  // memory, placed with PlaceOnDevice (device_placement.h).
  bool on_device = false;
  // The `blocking` attr: set in eager mode; the execution waits for its ops
  // on the calling thread (AsyncOp, NOTE [Blocking kernels in eager mode]).
  bool blocking = false;
};

// create_func / delete_func of every Horovod kernel.
void* CreateKernelConfig(TF_OpKernelConstruction* ctx);
// create_func of the kernels registered for PluggableDevices (on_device).
void* CreateDeviceKernelConfig(TF_OpKernelConstruction* ctx);
void DeleteKernelConfig(void* kernel);

// The core tensor name of this execution: the `tensor_name` input (input
// `index`, a scalar string) when not empty -- eager mode, where Python draws
// names that agree across ranks -- else the node name, without its name
// scope when ignore_name_scope (graph mode, as upstream). False (op failed)
// when the input cannot be read.
bool CoreName(AsyncOp* op, const KernelConfig& k, int index, std::string* name);

// Name of tensor i of a group of n: "<base>_<i+1>of<n>" (as the torch adapter).
std::string GroupName(const std::string& base, int i, int n);

// A core op for `in` with the kernel's attributes (type, buffers and
// callbacks are the caller's). `dims` must outlive the enqueue call.
hvda_core_op MakeOp(const KernelConfig& k, int32_t type, const std::string& name, TF_Tensor* in,
                    const std::vector<int64_t>& dims);

// Checks that t's dtype is one the core handles; fails op otherwise.
bool CheckDtype(AsyncOp* op, TF_Tensor* t, const std::string& name);

}  // namespace hvda_tf
