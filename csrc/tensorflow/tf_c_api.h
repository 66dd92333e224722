// Our declarations of the TensorFlow C API the op library calls (the lists
// are in tf_c_api_list.h), so the library builds without TensorFlow
// installed: no TensorFlow header is included anywhere in csrc/tensorflow.
// At load time the TF_* symbols bind to the libtensorflow_framework.so.2
// that TensorFlow has loaded (docs/design/tensorflow.md, "Building without
// TensorFlow").
//
// ABI facts this file relies on (check/tf_c_api_check.cc asserts each of
// them against a real TensorFlow's headers; tests/python/test_tf_ops.py runs
// it):
// - Handles are opaque: only pointers to them cross the API.
// - TF_DataType and TF_Code are C enums: int-sized, passed as int.
// - TF_Bool is unsigned char; `bool` parameters are C99 _Bool (1 byte).
// - TF_StringView, returned by value, is {const char* data; size_t len;}
//   (16 bytes, returned in two registers on x86-64 / aarch64).
// - A TF_STRING tensor's elements are 24-byte tensorflow::tstring objects
//   (TF_TString), read with ReadTString (tf_tstring_reader.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tf_c_api_list.h"
#include "tf_tstring_reader.h"

extern "C" {

// Opaque handles.
typedef struct TF_Status TF_Status;
typedef struct TF_Tensor TF_Tensor;
typedef struct TF_OpDefinitionBuilder TF_OpDefinitionBuilder;
typedef struct TF_ShapeInferenceContext TF_ShapeInferenceContext;
typedef struct TF_ShapeHandle TF_ShapeHandle;
typedef struct TF_KernelBuilder TF_KernelBuilder;
typedef struct TF_OpKernelConstruction TF_OpKernelConstruction;
typedef struct TF_OpKernelContext TF_OpKernelContext;
// What an async kernel's compute function receives as `done`: the address of
// TensorFlow's std::function<void()> (NOTE [Taking TF's done callback] in
// async_op.cc).
typedef struct TF_AsyncOpKernelDoneCallback TF_AsyncOpKernelDoneCallback;
// A PluggableDevice's stream: a pointer to the struct the device's TF plugin
// defines (NOTE [TensorFlow streams] in csrc/devices/cuda_like).
typedef struct SP_Stream_st* SP_Stream;

typedef unsigned char TF_Bool;

typedef struct TF_StringView {
  const char* data;
  size_t len;
} TF_StringView;

#define HVDA_TF_ENUMERATOR(name, value) name = value,
typedef enum TF_DataType { HVDA_TF_DATA_TYPES(HVDA_TF_ENUMERATOR) } TF_DataType;
typedef enum TF_Code { HVDA_TF_CODES(HVDA_TF_ENUMERATOR) } TF_Code;
#undef HVDA_TF_ENUMERATOR

#define HVDA_TF_DECLARE(ret, name, params) ret name params;
HVDA_TF_C_FUNCTIONS(HVDA_TF_DECLARE)
#undef HVDA_TF_DECLARE
// Weak: null where the loaded TensorFlow does not export them.
#define HVDA_TF_DECLARE_WEAK(ret, name, params) __attribute__((weak)) ret name params;
HVDA_TF_C_DEVICE_FUNCTIONS(HVDA_TF_DECLARE_WEAK)
#undef HVDA_TF_DECLARE_WEAK

}  // extern "C"

static_assert(sizeof(TF_DataType) == sizeof(int) && sizeof(TF_Code) == sizeof(int),
              "TF_DataType and TF_Code are int-sized C enums");
static_assert(sizeof(bool) == 1, "the C API's bool is a 1-byte _Bool");
static_assert(sizeof(TF_StringView) == 16 && offsetof(TF_StringView, data) == 0 &&
                  offsetof(TF_StringView, len) == 8,
              "TF_StringView is {const char* data; size_t len;}");
