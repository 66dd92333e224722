// Builds the hvda_plugin_v1 of a CUDA-like vendor from its VendorSpec. A
// vendor directory's entry symbol is one line:
//
//   extern "C" HVDA_PLUGIN_EXPORT const hvda_plugin_v1* horovod_accel_plugin_v1(
//       uint32_t major, uint32_t minor) { return MakeVendorPlugin(kSpec, major, minor); }
//
// Returns null for a host ABI major other than 1. The result has static
// storage; spec must too (one vendor per library).
#pragma once

#include <cstdint>

#include "devices/cuda_like/vendor_spec.h"
#include "horovod_accel/plugin.h"

namespace hvda {
namespace vendor {

const hvda_plugin_v1* MakeVendorPlugin(const VendorSpec& spec, uint32_t host_major,
                                       uint32_t host_minor);

}  // namespace vendor
}  // namespace hvda
