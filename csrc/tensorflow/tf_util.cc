#include "tf_util.h"

#include "tf_c_api.h"

namespace hvda_tf {

int32_t CoreDtype(TF_DataType t) {
  switch (t) {
    case TF_UINT8: return 0;
    case TF_INT8: return 1;
    case TF_INT16: return 2;
    case TF_INT32: return 3;
    case TF_INT64: return 4;
    case TF_HALF: return 5;
    case TF_BFLOAT16: return 6;
    case TF_FLOAT: return 7;
    case TF_DOUBLE: return 8;
    case TF_BOOL: return 9;
    case TF_UINT16: return 10;
    default: return -1;
  }
}

const char* TfDtypeName(TF_DataType t) {
  switch (t) {
    case TF_UINT8: return "uint8";
    case TF_INT8: return "int8";
    case TF_INT16: return "int16";
    case TF_UINT16: return "uint16";
    case TF_INT32: return "int32";
    case TF_INT64: return "int64";
    case TF_HALF: return "float16";
    case TF_BFLOAT16: return "bfloat16";
    case TF_FLOAT: return "float32";
    case TF_DOUBLE: return "float64";
    case TF_BOOL: return "bool";
    default: return "an unsupported type";
  }
}

TF_Code TfCode(int32_t core_status) {
  switch (core_status) {
    case HVDA_CORE_OK: return TF_OK;
    case HVDA_CORE_PRECONDITION: return TF_FAILED_PRECONDITION;
    case HVDA_CORE_ABORTED: return TF_ABORTED;
    case HVDA_CORE_INVALID_ARGUMENT: return TF_INVALID_ARGUMENT;
    case HVDA_CORE_TIMEOUT: return TF_DEADLINE_EXCEEDED;
    case HVDA_CORE_UNAVAILABLE: return TF_UNAVAILABLE;
    case HVDA_CORE_UNIMPLEMENTED: return TF_UNIMPLEMENTED;
    default: return TF_UNKNOWN;
  }
}

std::vector<int64_t> Dims(const TF_Tensor* t) {
  std::vector<int64_t> d(TF_NumDims(t));
  for (size_t i = 0; i < d.size(); ++i) d[i] = TF_Dim(t, static_cast<int>(i));
  return d;
}

int64_t NumElements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

void SetFailure(TF_OpKernelContext* ctx, TF_Code code, const std::string& message) {
  ScopedStatus s;
  TF_SetStatus(s.get(), code, message.c_str());
  TF_OpKernelContext_Failure(ctx, s.get());
}

void SetFailure(TF_OpKernelConstruction* ctx, TF_Code code, const std::string& message) {
  ScopedStatus s;
  TF_SetStatus(s.get(), code, message.c_str());
  TF_OpKernelConstruction_Failure(ctx, s.get());
}

bool ReadStringInput(TF_OpKernelContext* ctx, int index, std::string* out) {
  ScopedStatus s;
  TF_Tensor* t = nullptr;
  TF_GetInput(ctx, index, &t, s.get());
  if (!s.ok() || t == nullptr) {
    SetFailure(ctx, TF_INTERNAL, "cannot read the tensor name input: " + s.message());
    return false;
  }
  bool ok = TF_TensorType(t) == TF_STRING && TF_NumDims(t) == 0;
  if (ok) {
    *out = ReadTString(TF_TensorData(t));
  } else {
    SetFailure(ctx, TF_INVALID_ARGUMENT, "the tensor name input must be a scalar string");
  }
  TF_DeleteTensor(t);
  return ok;
}

int64_t AttrInt(TF_OpKernelConstruction* ctx, const char* name, int64_t dflt) {
  ScopedStatus s;
  if (!TF_OpKernelConstruction_HasAttr(ctx, name, s.get())) return dflt;
  int64_t v = dflt;
  TF_OpKernelConstruction_GetAttrInt64(ctx, name, &v, s.get());
  return s.ok() ? v : dflt;
}

float AttrFloat(TF_OpKernelConstruction* ctx, const char* name, float dflt) {
  ScopedStatus s;
  if (!TF_OpKernelConstruction_HasAttr(ctx, name, s.get())) return dflt;
  float v = dflt;
  TF_OpKernelConstruction_GetAttrFloat(ctx, name, &v, s.get());
  return s.ok() ? v : dflt;
}

bool AttrBool(TF_OpKernelConstruction* ctx, const char* name, bool dflt) {
  ScopedStatus s;
  if (!TF_OpKernelConstruction_HasAttr(ctx, name, s.get())) return dflt;
  TF_Bool v = dflt;
  TF_OpKernelConstruction_GetAttrBool(ctx, name, &v, s.get());
  return s.ok() ? static_cast<bool>(v) : dflt;
}

}  // namespace hvda_tf
