// Where a kernel running on a TensorFlow PluggableDevice (a vendor's TF
// plugin, e.g. device type "GCU") tells the core its tensors live: the
// core's device type, the device index and TF's stream for this kernel.
// The core hands the stream to the device plugin, which maps the SP_Stream
// to its native stream (core_api.h stream_framework "tensorflow"; NOTE
// [TensorFlow streams] in csrc/devices/cuda_like/framework_streams.h) and
// orders the collective after the work TF enqueued on it, with an event: no
// host synchronization, no host copy.
#pragma once

#include <cstdint>
#include <string>

#include "async_op.h"
#include "horovod_accel/core_api.h"
#include "tf_c_api.h"

namespace hvda_tf {

struct DevicePlacement {
  // The core's device type: TF's device type lower-cased ("GCU" -> "gcu"),
  // which is the device_type a horovod_accel device plugin declares.
  std::string core_type;
  int32_t device = 0;
  SP_Stream stream = nullptr;
};

// Whether the loaded TensorFlow exports what device kernels call
// (HVDA_TF_C_DEVICE_FUNCTIONS, referenced weakly).
bool DeviceKernelsAvailable();

// The placement of the kernel running in op's context. False (and op
// failed, saying why) when TF gives no stream, i.e. the device is not a
// PluggableDevice.
bool PlaceOnDevice(AsyncOp* op, DevicePlacement* out);

// Sets o's device fields from p; p must outlive the enqueue call.
void ApplyPlacement(const DevicePlacement& p, hvda_core_op* o);

}  // namespace hvda_tf
