// The plugin's hvda_ccl_ops_v1 table over the loaded vendor collective
// library (plugin_instance.h). Static storage; valid for the library's
// lifetime. allgatherv / alltoallv are set only when the vendor has them.
#pragma once

#include "devices/cuda_like/vendor_spec.h"
#include "horovod_accel/plugin.h"

namespace hvda {
namespace vendor {

const hvda_ccl_ops_v1* CclOps(const VendorSpec& spec);

}  // namespace vendor
}  // namespace hvda
