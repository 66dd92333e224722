// Checks csrc/mxnet/mx_abi.h against a real MXNet's headers: compiled (never
// linked, never part of a build) by tests/python/test_mxnet.py with the
// include/ folder of the MXNet pip package. A declaration or layout that
// drifts from MXNet's fails to compile.
#include <dlpack/dlpack.h>
#include <mshadow/base.h>
#include <mxnet/base.h>
#include <mxnet/c_api.h>
#include <mxnet/engine.h>

#include <cstddef>
#include <stdexcept>
#include <type_traits>

#include "../mx_abi.h"

namespace {

using hvda_mx::MxFunctions;

template <typename A, typename B>
constexpr bool Same() { return std::is_same<A, B>::value; }

// Every C API function: our pointer type is MXNet's.
static_assert(Same<decltype(MxFunctions::MXEnginePushAsyncND), decltype(&::MXEnginePushAsyncND)>(),
              "MXEnginePushAsyncND");
static_assert(Same<decltype(MxFunctions::MXShallowCopyNDArray), decltype(&::MXShallowCopyNDArray)>(),
              "MXShallowCopyNDArray");
static_assert(Same<decltype(MxFunctions::MXNDArrayFree), decltype(&::MXNDArrayFree)>(), "MXNDArrayFree");
static_assert(Same<decltype(MxFunctions::MXNDArrayToDLPack), decltype(&::MXNDArrayToDLPack)>(),
              "MXNDArrayToDLPack");
static_assert(Same<decltype(MxFunctions::MXNDArrayGetShapeEx), decltype(&::MXNDArrayGetShapeEx)>(),
              "MXNDArrayGetShapeEx");
static_assert(Same<decltype(MxFunctions::MXNDArrayGetDType), decltype(&::MXNDArrayGetDType)>(),
              "MXNDArrayGetDType");
static_assert(Same<decltype(MxFunctions::MXNDArrayGetContext), decltype(&::MXNDArrayGetContext)>(),
              "MXNDArrayGetContext");
static_assert(Same<decltype(MxFunctions::MXGetLastError), decltype(&::MXGetLastError)>(),
              "MXGetLastError");
static_assert(Same<hvda_mx::EngineAsyncFunc, ::EngineAsyncFunc>(), "EngineAsyncFunc");
static_assert(Same<hvda_mx::EngineFuncParamDeleter, ::EngineFuncParamDeleter>(),
              "EngineFuncParamDeleter");

// The engine's completion callback: three pointers (its members are private).
static_assert(sizeof(mxnet::engine::CallbackOnComplete) == sizeof(hvda_mx::CallbackOnComplete),
              "CallbackOnComplete");

// Context and FnProperty.
static_assert(sizeof(mxnet::Context) == sizeof(hvda_mx::Context) &&
              offsetof(mxnet::Context, dev_type) == offsetof(hvda_mx::Context, dev_type) &&
              offsetof(mxnet::Context, dev_id) == offsetof(hvda_mx::Context, dev_id) &&
              sizeof(mxnet::Context::DeviceType) == sizeof(int32_t), "Context");
static_assert(mxnet::Context::kCPU == hvda_mx::kDevCPU && mxnet::Context::kGPU == hvda_mx::kDevGPU &&
              mxnet::Context::kCPUPinned == hvda_mx::kDevCPUPinned &&
              mxnet::Context::kCPUShared == hvda_mx::kDevCPUShared, "device types");
static_assert(sizeof(mxnet::FnProperty) == sizeof(int32_t) &&
              static_cast<int32_t>(mxnet::FnProperty::kCPUPrioritized) ==
                  hvda_mx::kFnPropertyCPUPrioritized, "FnProperty");

// dmlc::Error adds nothing to std::runtime_error.
static_assert(std::is_base_of<std::runtime_error, dmlc::Error>::value &&
              sizeof(dmlc::Error) == sizeof(hvda_mx::EngineError), "dmlc::Error");

// DLPack.
static_assert(sizeof(::DLTensor) == sizeof(hvda_mx::DLTensor) &&
              offsetof(::DLTensor, data) == offsetof(hvda_mx::DLTensor, data) &&
              offsetof(::DLTensor, ctx) == offsetof(hvda_mx::DLTensor, device_type) &&
              offsetof(::DLTensor, ndim) == offsetof(hvda_mx::DLTensor, ndim) &&
              offsetof(::DLTensor, dtype) == offsetof(hvda_mx::DLTensor, dtype_code) &&
              offsetof(::DLTensor, shape) == offsetof(hvda_mx::DLTensor, shape) &&
              offsetof(::DLTensor, strides) == offsetof(hvda_mx::DLTensor, strides) &&
              offsetof(::DLTensor, byte_offset) == offsetof(hvda_mx::DLTensor, byte_offset),
              "DLTensor");
static_assert(sizeof(::DLManagedTensor) == sizeof(hvda_mx::DLManagedTensor) &&
              offsetof(::DLManagedTensor, manager_ctx) ==
                  offsetof(hvda_mx::DLManagedTensor, manager_ctx) &&
              offsetof(::DLManagedTensor, deleter) == offsetof(hvda_mx::DLManagedTensor, deleter),
              "DLManagedTensor");

// mshadow type flags -> core dtype codes (core_api.h).
static_assert(hvda_mx::CoreDtype(mshadow::kFloat32) == 7 && hvda_mx::CoreDtype(mshadow::kFloat64) == 8 &&
              hvda_mx::CoreDtype(mshadow::kFloat16) == 5 && hvda_mx::CoreDtype(mshadow::kUint8) == 0 &&
              hvda_mx::CoreDtype(mshadow::kInt32) == 3 && hvda_mx::CoreDtype(mshadow::kInt8) == 1 &&
              hvda_mx::CoreDtype(mshadow::kInt64) == 4 && hvda_mx::CoreDtype(mshadow::kBool) == 9 &&
              hvda_mx::CoreDtype(mshadow::kInt16) == 2 && hvda_mx::CoreDtype(mshadow::kUint16) == 10 &&
              hvda_mx::CoreDtype(mshadow::kBfloat16) == 6 && hvda_mx::CoreDtype(mshadow::kUint32) == -1 &&
              hvda_mx::CoreDtype(mshadow::kUint64) == -1, "dtype table");

}  // namespace
