// The part of TensorFlow's stable C API that the op library uses, as lists:
// every function (return type, name, parameters), every TF_DataType and
// TF_Code value. Written for this project from the documented C ABI (the
// C API headers tensorflow/c/{kernels,ops,tf_tensor,tf_status,
// tf_datatype}.h describe the same functions); no TensorFlow header is
// included or needed. Three consumers expand the lists:
//   tf_c_api.h               declares them (what the op library compiles against);
//   stub/tf_framework_stub.cc  defines them in the link-time stub
//                            libtensorflow_framework.so.2 (never shipped);
//   check/tf_c_api_check.cc  compares them with a real TensorFlow's headers
//                            (tests/python/test_tf_ops.py builds and runs it).
// Adding a function: append it here; the stub and the check follow.
//
// Types named in the lists: the opaque handles, TF_DataType, TF_Code,
// TF_Bool and TF_StringView (tf_c_api.h defines ours; the check uses TF's).
#pragma once

// X(return type, name, (parameters)). Each of these functions is exported,
// without a symbol version, by libtensorflow_framework.so.2 of every TF 2.x
// pip package from 2.11 (the first with TF_NewAsyncKernelBuilder) on.
#define HVDA_TF_C_FUNCTIONS(X)                                                                    \
  /* status */                                                                                   \
  X(TF_Status*, TF_NewStatus, (void))                                                            \
  X(void, TF_DeleteStatus, (TF_Status * status))                                                 \
  X(void, TF_SetStatus, (TF_Status * status, TF_Code code, const char* message))                 \
  X(TF_Code, TF_GetCode, (const TF_Status* status))                                              \
  X(const char*, TF_Message, (const TF_Status* status))                                          \
  /* tensors and dtypes */                                                                       \
  X(size_t, TF_DataTypeSize, (TF_DataType dtype))                                                \
  X(void, TF_DeleteTensor, (TF_Tensor * tensor))                                                 \
  X(TF_DataType, TF_TensorType, (const TF_Tensor* tensor))                                       \
  X(int, TF_NumDims, (const TF_Tensor* tensor))                                                  \
  X(int64_t, TF_Dim, (const TF_Tensor* tensor, int dim))                                         \
  X(int64_t, TF_TensorElementCount, (const TF_Tensor* tensor))                                   \
  X(void*, TF_TensorData, (const TF_Tensor* tensor))                                             \
  /* op definitions and shape functions */                                                       \
  X(TF_OpDefinitionBuilder*, TF_NewOpDefinitionBuilder, (const char* op_name))                   \
  X(void, TF_OpDefinitionBuilderAddInput, (TF_OpDefinitionBuilder * builder, const char* spec))  \
  X(void, TF_OpDefinitionBuilderAddOutput, (TF_OpDefinitionBuilder * builder, const char* spec)) \
  X(void, TF_OpDefinitionBuilderAddAttr, (TF_OpDefinitionBuilder * builder, const char* spec))   \
  X(void, TF_OpDefinitionBuilderSetIsStateful, (TF_OpDefinitionBuilder * builder, bool stateful)) \
  X(void, TF_OpDefinitionBuilderSetShapeInferenceFunction,                                       \
    (TF_OpDefinitionBuilder * builder,                                                           \
     void (*shape_fn)(TF_ShapeInferenceContext * ctx, TF_Status * status)))                      \
  X(void, TF_RegisterOpDefinition, (TF_OpDefinitionBuilder * builder, TF_Status * status))       \
  X(TF_ShapeHandle*, TF_NewShapeHandle, (void))                                                  \
  X(void, TF_DeleteShapeHandle, (TF_ShapeHandle * handle))                                       \
  X(int64_t, TF_ShapeInferenceContextNumInputs, (TF_ShapeInferenceContext * ctx))                \
  X(void, TF_ShapeInferenceContextGetInput,                                                      \
    (TF_ShapeInferenceContext * ctx, int index, TF_ShapeHandle* handle, TF_Status* status))      \
  X(void, TF_ShapeInferenceContextSetOutput,                                                     \
    (TF_ShapeInferenceContext * ctx, int index, TF_ShapeHandle* handle, TF_Status* status))      \
  X(int, TF_ShapeInferenceContextRankKnown, (TF_ShapeInferenceContext * ctx, TF_ShapeHandle* h)) \
  X(void, TF_ShapeInferenceContextWithRankAtLeast,                                               \
    (TF_ShapeInferenceContext * ctx, TF_ShapeHandle* handle, int64_t rank,                       \
     TF_ShapeHandle* result, TF_Status* status))                                                 \
  X(void, TF_ShapeInferenceContextSubshape,                                                      \
    (TF_ShapeInferenceContext * ctx, TF_ShapeHandle* handle, int64_t start, int64_t end,         \
     TF_ShapeHandle* result, TF_Status* status))                                                 \
  X(void, TF_ShapeInferenceContextConcatenateShapes,                                             \
    (TF_ShapeInferenceContext * ctx, TF_ShapeHandle* first, TF_ShapeHandle* second,              \
     TF_ShapeHandle* result, TF_Status* status))                                                 \
  X(TF_ShapeHandle*, TF_ShapeInferenceContextVectorFromSize,                                     \
    (TF_ShapeInferenceContext * ctx, size_t size))                                               \
  X(TF_ShapeHandle*, TF_ShapeInferenceContextScalar, (TF_ShapeInferenceContext * ctx))           \
  /* kernel registration */                                                                      \
  X(TF_KernelBuilder*, TF_NewKernelBuilder,                                                      \
    (const char* op_name, const char* device_name,                                               \
     void* (*create)(TF_OpKernelConstruction * ctx),                                             \
     void (*compute)(void* kernel, TF_OpKernelContext* ctx), void (*destroy)(void* kernel)))     \
  X(TF_KernelBuilder*, TF_NewAsyncKernelBuilder,                                                 \
    (const char* op_name, const char* device_name,                                               \
     void* (*create)(TF_OpKernelConstruction * ctx),                                             \
     void (*compute_async)(void* kernel, TF_OpKernelContext* ctx,                                \
                           TF_AsyncOpKernelDoneCallback* done),                                  \
     void (*destroy)(void* kernel)))                                                             \
  X(void, TF_KernelBuilder_HostMemory, (TF_KernelBuilder * builder, const char* arg_name))       \
  X(void, TF_RegisterKernelBuilder,                                                              \
    (const char* kernel_name, TF_KernelBuilder* builder, TF_Status* status))                     \
  /* kernel construction */                                                                      \
  X(TF_StringView, TF_OpKernelConstruction_GetName, (TF_OpKernelConstruction * ctx))             \
  X(bool, TF_OpKernelConstruction_HasAttr,                                                       \
    (TF_OpKernelConstruction * ctx, const char* name, TF_Status* status))                        \
  X(void, TF_OpKernelConstruction_GetAttrInt64,                                                  \
    (TF_OpKernelConstruction * ctx, const char* name, int64_t* value, TF_Status* status))        \
  X(void, TF_OpKernelConstruction_GetAttrFloat,                                                  \
    (TF_OpKernelConstruction * ctx, const char* name, float* value, TF_Status* status))          \
  X(void, TF_OpKernelConstruction_GetAttrBool,                                                   \
    (TF_OpKernelConstruction * ctx, const char* name, TF_Bool* value, TF_Status* status))        \
  X(void, TF_OpKernelConstruction_Failure, (TF_OpKernelConstruction * ctx, TF_Status * status))  \
  /* kernel execution */                                                                         \
  X(int, TF_NumInputs, (TF_OpKernelContext * ctx))                                               \
  X(TF_DataType, TF_InputDatatype, (TF_OpKernelContext * ctx, int index))                        \
  X(void, TF_GetInput,                                                                           \
    (TF_OpKernelContext * ctx, int index, TF_Tensor** tensor, TF_Status* status))                \
  X(TF_Tensor*, TF_AllocateOutput,                                                               \
    (TF_OpKernelContext * ctx, int index, TF_DataType dtype, const int64_t* dims, int num_dims,  \
     size_t bytes, TF_Status* status))                                                           \
  X(TF_Tensor*, TF_ForwardInputOrAllocateOutput,                                                 \
    (TF_OpKernelContext * ctx, const int* candidates, int num_candidates, int output_index,      \
     const int64_t* dims, int num_dims, int* forwarded, TF_Status* status))                      \
  X(void, TF_OpKernelContext_Failure, (TF_OpKernelContext * ctx, TF_Status * status))

// X(return type, name, (parameters)): what the kernels for PluggableDevices
// call (device_kernels.cc). Referenced weakly (tf_c_api.h): older
// TensorFlows lack some of them (TF_GetDeviceName), and the library must
// still load there, with device kernels reported unavailable
// (hvda_tf_device_kernels_available).
#define HVDA_TF_C_DEVICE_FUNCTIONS(X)                                                           \
  X(SP_Stream, TF_GetStream, (TF_OpKernelContext * ctx, TF_Status * status))                   \
  X(int, TF_GetDeviceId, (TF_OpKernelContext * ctx))                                           \
  X(TF_StringView, TF_GetDeviceName, (TF_OpKernelContext * ctx))

// X(name, value): the TF_DataType values used (the numbers of TensorFlow's
// DataType proto enum, types.proto; tf.dtypes.DType.as_datatype_enum).
#define HVDA_TF_DATA_TYPES(X) \
  X(TF_FLOAT, 1)              \
  X(TF_DOUBLE, 2)             \
  X(TF_INT32, 3)              \
  X(TF_UINT8, 4)              \
  X(TF_INT16, 5)              \
  X(TF_INT8, 6)               \
  X(TF_STRING, 7)             \
  X(TF_INT64, 9)              \
  X(TF_BOOL, 10)              \
  X(TF_BFLOAT16, 14)          \
  X(TF_UINT16, 17)            \
  X(TF_HALF, 19)

// X(name, value): the TF_Code values used (the canonical error codes of
// absl / gRPC; tf.errors.*: OK 0 ... UNAVAILABLE 14).
#define HVDA_TF_CODES(X)        \
  X(TF_OK, 0)                   \
  X(TF_UNKNOWN, 2)              \
  X(TF_INVALID_ARGUMENT, 3)     \
  X(TF_DEADLINE_EXCEEDED, 4)    \
  X(TF_RESOURCE_EXHAUSTED, 8)   \
  X(TF_FAILED_PRECONDITION, 9)  \
  X(TF_ABORTED, 10)             \
  X(TF_UNIMPLEMENTED, 12)       \
  X(TF_INTERNAL, 13)            \
  X(TF_UNAVAILABLE, 14)
