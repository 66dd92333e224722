// The Enflame GCU plugin: the TOPS runtime and ECCL behind the shared
// CUDA-like implementation (csrc/devices/cuda_like). Only names and values
// live here; both libraries are dlopen()ed at init (HOROVOD_GCU_RUNTIME_LIB,
// HOROVOD_ECCL_LIB override the paths), so the plugin builds without TOPS.
#include "devices/cuda_like/make_plugin.h"

namespace hvda {
namespace vendor {
namespace {

VendorSpec MakeGcuSpec() {
  VendorSpec s{};
  s.plugin_name = "gcu";
  s.version = "0.1.0";
  s.device_type = "gcu";  // torch_gcu's PrivateUse1 name
  s.runtime_name = "TOPS";
  s.ccl_name = "ECCL";
  s.runtime_lib = {"HOROVOD_GCU_RUNTIME_LIB", {"libtopsrt.so", "libtopsrt.so.2", nullptr},
                   "the TOPS runtime"};
  s.ccl_lib = {"HOROVOD_ECCL_LIB", {"libeccl.so", "libeccl.so.2", nullptr}, "the ECCL"};
  s.rt = {"topsGetDeviceCount", "topsSetDevice", "topsMalloc", "topsFree", "topsHostMalloc",
          "topsHostFree", "topsMemcpyAsync", "topsMemsetAsync", "topsStreamCreateWithFlags",
          "topsStreamDestroy", "topsStreamSynchronize", "topsStreamWaitEvent",
          "topsEventCreateWithFlags", "topsEventDestroy", "topsEventRecord", "topsEventQuery",
          "topsEventSynchronize", "topsLaunchHostFunc", "topsGetLastError", "topsGetErrorString"};
  s.ccl = {"ecclGetVersion", "ecclGetErrorString", "ecclGetUniqueId", "ecclCommInitRank",
           "ecclCommDestroy", "ecclCommAbort", "ecclCommGetAsyncError", "ecclAllReduce",
           "ecclBroadcast", "ecclAllGather", "ecclReduceScatter", "ecclSend", "ecclRecv",
           "ecclGroupStart", "ecclGroupEnd", "ecclRedOpCreatePreMulSum", "ecclRedOpDestroy",
           "ecclAllGatherV", "ecclAlltoAllv"};
  // What a GCU TensorFlow PluggableDevice plugin exports for Horovod (NOTE
  // [TensorFlow streams] in devices/cuda_like/framework_streams.h).
  s.tf_stream_symbol = "hvda_tf_gcu_native_stream";
  SetCudaLikeValues(&s);  // same copy kinds, flags, dtypes and ops as CUDA/NCCL
  s.not_ready_is_sticky = true;
  s.ccl_in_progress = 6;   // ecclInProgress
  s.ccl_remote_error = -1;  // ECCL has none: a lost peer is ecclSystemError
  return s;
}

const VendorSpec& GcuSpec() {
  static const VendorSpec spec = MakeGcuSpec();
  return spec;
}

}  // namespace
}  // namespace vendor
}  // namespace hvda

extern "C" HVDA_PLUGIN_EXPORT const hvda_plugin_v1* horovod_accel_plugin_v1(uint32_t major,
                                                                            uint32_t minor) {
  return hvda::vendor::MakeVendorPlugin(hvda::vendor::GcuSpec(), major, minor);
}
