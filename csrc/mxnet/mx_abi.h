// The part of MXNet's binary interface the MXNet engine library uses,
// written for this project (no MXNet header is included anywhere): six C API
// functions, reached through addresses Python hands over (hvda_mx_bind; the
// library neither links nor dlopens libmxnet.so), and four layouts that cross
// the engine's C API by pointer. Checked against MXNet 1.9.1's own headers
// (include/mxnet/c_api.h, engine.h, base.h, dlpack/dlpack.h, mshadow/base.h
// of the pip wheel); docs/mxnet.md, "The engine library", lists the facts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace hvda_mx {

using NDArrayHandle = void*;

// EngineAsyncFunc(RunContext*, CallbackOnComplete*, param): both pointers
// are valid only during the call.
using EngineAsyncFunc = void (*)(void* run_ctx, void* on_complete, void* param);
using EngineFuncParamDeleter = void (*)(void* param);

// The MXNet C API functions used (c_api.h; every one returns 0 or -1 with
// MXGetLastError() set on the calling thread).
struct MxFunctions {
  int (*MXEnginePushAsyncND)(EngineAsyncFunc async_func, void* func_param,
                             EngineFuncParamDeleter deleter, const void* ctx_handle,
                             NDArrayHandle* const_nds, int num_const_nds,
                             NDArrayHandle* mutable_nds, int num_mutable_nds,
                             const void* prop_handle, int priority, const char* opr_name,
                             bool wait);
  int (*MXShallowCopyNDArray)(NDArrayHandle src, NDArrayHandle* out);
  int (*MXNDArrayFree)(NDArrayHandle handle);
  int (*MXNDArrayToDLPack)(NDArrayHandle handle, void** out_dlpack);
  int (*MXNDArrayGetShapeEx)(NDArrayHandle handle, int* out_dim, const int** out_pdata);
  int (*MXNDArrayGetDType)(NDArrayHandle handle, int* out_dtype);
  int (*MXNDArrayGetContext)(NDArrayHandle handle, int* out_dev_type, int* out_dev_id);
  const char* (*MXGetLastError)();
};

// mxnet::engine::CallbackOnComplete (engine.h, 1.6+): the engine passes the
// address of one to an async function; calling callback(engine, param,
// error) completes the operation (error: a dmlc::Error*, or null). Copied by
// value (three pointers), as MXNet itself does.
struct CallbackOnComplete {
  void (*callback)(void* engine, void* param, const void* error);
  void* engine;
  void* param;
};
static_assert(sizeof(CallbackOnComplete) == 3 * sizeof(void*), "CallbackOnComplete layout");

// mxnet::Context (base.h): {DeviceType dev_type (an int enum), int32 dev_id}.
struct Context {
  int32_t dev_type;
  int32_t dev_id;
};
constexpr int32_t kDevCPU = 1;        // Context::kCPU
constexpr int32_t kDevGPU = 2;        // Context::kGPU
constexpr int32_t kDevCPUPinned = 3;  // Context::kCPUPinned
constexpr int32_t kDevCPUShared = 5;  // Context::kCPUShared

// mxnet::FnProperty (engine.h): an int-sized enum class.
constexpr int32_t kFnPropertyCPUPrioritized = 3;

// dmlc::Error (dmlc/logging.h): `struct Error : std::runtime_error` with no
// member of its own. The engine copies the error it is given as a
// dmlc::Error (std::make_exception_ptr(*error)), which reads only the
// std::runtime_error base; MXNet links the same shared libstdc++ (whose
// runtime_error layout is ABI-stable), so an object of this type stands in.
struct EngineError : public std::runtime_error {
  explicit EngineError(const std::string& what) : std::runtime_error(what) {}
};
static_assert(sizeof(EngineError) == sizeof(std::runtime_error), "dmlc::Error layout");

// DLPack 0.2 (dlpack/dlpack.h), what MXNDArrayToDLPack returns.
struct DLTensor {
  void* data;
  int32_t device_type;
  int32_t device_id;
  int32_t ndim;
  uint8_t dtype_code;
  uint8_t dtype_bits;
  uint16_t dtype_lanes;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};
static_assert(offsetof(DLTensor, shape) == 24 && sizeof(DLTensor) == 48, "DLTensor layout");

// mshadow type flags (mshadow/base.h) -> the core's dtype codes
// (core_api.h); -1 for the types the core has no code for (uint32, uint64).
constexpr int32_t CoreDtype(int mshadow_flag) {
  switch (mshadow_flag) {
    case 0: return 7;   // float32
    case 1: return 8;   // float64
    case 2: return 5;   // float16
    case 3: return 0;   // uint8
    case 4: return 3;   // int32
    case 5: return 1;   // int8
    case 6: return 4;   // int64
    case 7: return 9;   // bool
    case 8: return 2;   // int16
    case 9: return 10;  // uint16
    case 12: return 6;  // bfloat16
    default: return -1;
  }
}

inline const char* MshadowTypeName(int flag) {
  static const char* const kNames[] = {"float32", "float64", "float16", "uint8",  "int32",
                                       "int8",    "int64",   "bool",    "int16",  "uint16",
                                       "uint32",  "uint64",  "bfloat16"};
  return flag >= 0 && flag < 13 ? kNames[flag] : "unknown";
}

}  // namespace hvda_mx
