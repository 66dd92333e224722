// The exported C functions of libhvda_mxnet.so (hvda_mxnet.h): argument
// translation and the thread-local error message; the work is EngineOp's.
#include "hvda_mxnet.h"

#include <string>

#include "engine_op.h"
#include "link.h"

namespace {

thread_local std::string g_last_error;

int Fail(std::string message) {
  g_last_error = std::move(message);
  return -1;
}

}  // namespace

extern "C" int hvda_mx_bind(uintptr_t core_table, uintptr_t core_runtime,
                            const hvda_mx_functions* f) {
  if (f == nullptr || f->struct_size < sizeof(hvda_mx_functions))
    return Fail("hvda_mx_bind: the MXNet function table is missing or too short");
  hvda_mx::MxFunctions mx{};
  mx.MXEnginePushAsyncND = reinterpret_cast<decltype(mx.MXEnginePushAsyncND)>(f->MXEnginePushAsyncND);
  mx.MXShallowCopyNDArray = reinterpret_cast<decltype(mx.MXShallowCopyNDArray)>(f->MXShallowCopyNDArray);
  mx.MXNDArrayFree = reinterpret_cast<decltype(mx.MXNDArrayFree)>(f->MXNDArrayFree);
  mx.MXNDArrayToDLPack = reinterpret_cast<decltype(mx.MXNDArrayToDLPack)>(f->MXNDArrayToDLPack);
  mx.MXNDArrayGetShapeEx = reinterpret_cast<decltype(mx.MXNDArrayGetShapeEx)>(f->MXNDArrayGetShapeEx);
  mx.MXNDArrayGetDType = reinterpret_cast<decltype(mx.MXNDArrayGetDType)>(f->MXNDArrayGetDType);
  mx.MXNDArrayGetContext = reinterpret_cast<decltype(mx.MXNDArrayGetContext)>(f->MXNDArrayGetContext);
  mx.MXGetLastError = reinterpret_cast<decltype(mx.MXGetLastError)>(f->MXGetLastError);
  std::string error;
  if (!hvda_mx::Bind(reinterpret_cast<const hvda_core_api_v1*>(core_table),
                     reinterpret_cast<hvda_core_runtime*>(core_runtime), mx, &error))
    return Fail(error);
  return 0;
}

extern "C" int hvda_mx_push(int32_t op_type, int32_t n, void* const* inputs, void* const* outputs,
                            const char* const* names, int32_t process_set_id, int32_t reduce_op,
                            double prescale, double postscale, int32_t root_rank,
                            int32_t priority, void* order_after) {
  try {
    hvda_mx::OpParams params{op_type, process_set_id, reduce_op, prescale, postscale, root_rank};
    std::string error;
    auto op = hvda_mx::EngineOp::Create(params, n, inputs, outputs, names, &error);
    if (!op) return Fail(error);
    if (!hvda_mx::EngineOp::Push(std::move(op), priority, order_after, &error)) return Fail(error);
    return 0;
  } catch (const std::exception& e) {  // allocation failures: nothing may cross to ctypes
    return Fail(std::string("hvda_mx_push: ") + e.what());
  }
}

extern "C" void hvda_mx_end_epoch(void) { hvda_mx::EndEpoch(); }

extern "C" const char* hvda_mx_last_error(void) { return g_last_error.c_str(); }
