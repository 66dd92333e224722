// The CUDA plugin: the CUDA runtime and NCCL behind the shared CUDA-like
// implementation (csrc/devices/cuda_like). Only names and values live
// here; both libraries are dlopen()ed at init (HOROVOD_CUDA_RUNTIME_LIB,
// HOROVOD_NCCL_LIB override the paths), so the plugin builds without the
// CUDA toolkit and one build serves every CUDA 11/12/13 installation.
#include "devices/cuda_like/make_plugin.h"

namespace hvda {
namespace vendor {
namespace {

VendorSpec MakeCudaSpec() {
  VendorSpec s{};
  s.plugin_name = "cuda";
  s.version = "0.1.0";
  s.device_type = "cuda";
  s.runtime_name = "CUDA";
  s.ccl_name = "NCCL";
  s.runtime_lib = {"HOROVOD_CUDA_RUNTIME_LIB",
                   {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", nullptr},
                   "the CUDA runtime"};
  s.ccl_lib = {"HOROVOD_NCCL_LIB", {"libnccl.so", "libnccl.so.2", nullptr}, "NCCL"};
  s.rt = {"cudaGetDeviceCount", "cudaSetDevice", "cudaMalloc", "cudaFree", "cudaHostAlloc",
          "cudaFreeHost", "cudaMemcpyAsync", "cudaMemsetAsync", "cudaStreamCreateWithFlags",
          "cudaStreamDestroy", "cudaStreamSynchronize", "cudaStreamWaitEvent",
          "cudaEventCreateWithFlags", "cudaEventDestroy", "cudaEventRecord", "cudaEventQuery",
          "cudaEventSynchronize", "cudaLaunchHostFunc", "cudaGetLastError", "cudaGetErrorString"};
  s.ccl = {"ncclGetVersion", "ncclGetErrorString", "ncclGetUniqueId", "ncclCommInitRank",
           "ncclCommDestroy", "ncclCommAbort", "ncclCommGetAsyncError", "ncclAllReduce",
           "ncclBroadcast", "ncclAllGather", "ncclReduceScatter", "ncclSend", "ncclRecv",
           "ncclGroupStart", "ncclGroupEnd", "ncclRedOpCreatePreMulSum", "ncclRedOpDestroy",
           nullptr, nullptr};  // no allgatherv / alltoallv: the core composes them
  SetCudaLikeValues(&s);  // same copy kinds, flags, dtypes and ops as CUDA/NCCL
  s.not_ready_is_sticky = false;
  s.ccl_in_progress = 7;  // ncclInProgress
  s.ccl_remote_error = 6;  // ncclRemoteError
  return s;
}

const VendorSpec& CudaSpec() {
  static const VendorSpec spec = MakeCudaSpec();
  return spec;
}

}  // namespace
}  // namespace vendor
}  // namespace hvda

extern "C" HVDA_PLUGIN_EXPORT const hvda_plugin_v1* horovod_accel_plugin_v1(uint32_t major,
                                                                            uint32_t minor) {
  return hvda::vendor::MakeVendorPlugin(hvda::vendor::CudaSpec(), major, minor);
}
