#include "device_placement.h"

#include <cctype>

namespace hvda_tf {
namespace {

// "GCU" from "/job:localhost/replica:0/task:0/device:GCU:0"; "" when the
// name has no device part.
std::string DeviceTypeOf(const std::string& name) {
  static const char kMarker[] = "device:";
  size_t at = name.rfind(kMarker);
  if (at == std::string::npos) return "";
  at += sizeof(kMarker) - 1;
  size_t end = name.find(':', at);
  return name.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

}  // namespace

bool DeviceKernelsAvailable() {
  return &TF_GetStream != nullptr && &TF_GetDeviceId != nullptr && &TF_GetDeviceName != nullptr;
}

bool PlaceOnDevice(AsyncOp* op, DevicePlacement* out) {
  TF_StringView n = TF_GetDeviceName(op->ctx());
  const std::string name(n.data, n.len);
  const std::string type = DeviceTypeOf(name);
  out->core_type.clear();
  for (char c : type) out->core_type += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  out->device = TF_GetDeviceId(op->ctx());
  ScopedStatus s;
  out->stream = TF_GetStream(op->ctx(), s.get());
  if (!s.ok() || out->stream == nullptr || out->core_type.empty()) {
    op->Fail(TF_INTERNAL, "Horovod's kernel on " + name + " got no device stream from "
                          "TensorFlow (" + s.message() + "); device kernels run only on "
                          "PluggableDevices");
    return false;
  }
  return true;
}

void ApplyPlacement(const DevicePlacement& p, hvda_core_op* o) {
  o->device_type = p.core_type.c_str();
  o->device = p.device;
  o->stream = p.stream;
  o->stream_framework = "tensorflow";
}

}  // namespace hvda_tf
