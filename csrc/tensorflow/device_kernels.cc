// Horovod's collective kernels on TensorFlow PluggableDevices (a vendor's TF
// plugin, loaded with tf.load_pluggable_device_library or from TF's plugin
// folder). TensorFlow has loaded this library (and run its CPU
// registrations) before Python knows which pluggable devices exist and which
// of them a horovod_accel device plugin serves, so Python registers the
// device kernels afterwards, once per device type
// (horovod_accel/tensorflow/device_kernels.py). A kernel registered later
// is found by every op placed afterwards: TF looks kernels up when it
// instantiates one, not when the op library loads.
#include <cstring>
#include <string>

#include "device_placement.h"
#include "kernels.h"
#include "tf_c_api.h"

namespace {

void CopyMessage(const std::string& text, char* message, size_t size) {
  if (message == nullptr || size == 0) return;
  std::strncpy(message, text.c_str(), size - 1);
  message[size - 1] = '\0';
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int hvda_tf_device_kernels_available() {
  return hvda_tf::DeviceKernelsAvailable() ? 1 : 0;
}

extern "C" __attribute__((visibility("default"))) int hvda_tf_register_device_kernels(
    const char* device_type, char* message, size_t message_size) {
  if (!hvda_tf::DeviceKernelsAvailable()) {
    CopyMessage("this TensorFlow does not export TF_GetStream, TF_GetDeviceId and "
                "TF_GetDeviceName (its kernel C API is older than the device kernels need)",
                message, message_size);
    return -1;
  }
  if (device_type == nullptr || std::strcmp(device_type, "CPU") == 0) {
    CopyMessage("device kernels are for PluggableDevice types, not CPU", message, message_size);
    return -1;
  }
  hvda_tf::ScopedStatus status;
  hvda_tf::RegisterInplaceKernels(device_type, status.get());
  hvda_tf::RegisterGatherKernels(device_type, status.get());
  if (!status.ok()) {
    CopyMessage("registering Horovod's kernels for " + std::string(device_type) +
                    " failed: " + status.message(),
                message, message_size);
    return -1;
  }
  return 0;
}
