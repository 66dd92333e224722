// The plugin's hvda_device_ops_v1 table over the loaded vendor runtime
// (plugin_instance.h). Static storage; valid for the library's lifetime.
#pragma once

#include "horovod_accel/plugin.h"

namespace hvda {
namespace vendor {

const hvda_device_ops_v1* DeviceOps();

}  // namespace vendor
}  // namespace hvda
