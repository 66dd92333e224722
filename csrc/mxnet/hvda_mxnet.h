/*
 * The MXNet engine library (libhvda_mxnet.so): what Python
 * (horovod_accel/mxnet/engine.py) calls through ctypes.
 *
 * The library runs Horovod collectives as asynchronous operations of MXNet's
 * dependency engine, as upstream's mpi_lib does, without MXNet headers or a
 * link to libmxnet.so (docs/mxnet.md, "The engine library"). A pushed op
 * reads its inputs and writes its outputs only when the engine has finished
 * every earlier write of the inputs and every earlier read or write of the
 * outputs; later MXNet reads of the outputs (asnumpy, an optimizer update)
 * wait for the collective. The calling thread never waits.
 */
#ifndef HOROVOD_ACCEL_MXNET_H_
#define HOROVOD_ACCEL_MXNET_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Addresses of MXNet C API functions (those of the libmxnet.so that
 * `import mxnet` loaded), in this order; struct_size = sizeof. */
typedef struct hvda_mx_functions {
  size_t struct_size;
  void* MXEnginePushAsyncND;
  void* MXShallowCopyNDArray;
  void* MXNDArrayFree;
  void* MXNDArrayToDLPack;
  void* MXNDArrayGetShapeEx;
  void* MXNDArrayGetDType;
  void* MXNDArrayGetContext;
  void* MXGetLastError;
} hvda_mx_functions;

/* Connects the library to the core (the table and runtime of
 * `_core.Runtime.c_api()`, both alive for the rest of the process) and to
 * MXNet. Returns 0, or -1 with hvda_mx_last_error() set. May be called
 * again with the same values. */
__attribute__((visibility("default"))) int hvda_mx_bind(uintptr_t core_table,
                                                        uintptr_t core_runtime,
                                                        const hvda_mx_functions* functions);

/* Pushes one collective over n >= 1 NDArrays (n > 1: a group, negotiated
 * and fused together) to MXNet's engine and returns at once.
 *   op_type: HVDA_CORE_ALLREDUCE, HVDA_CORE_BROADCAST or
 *            HVDA_CORE_REDUCESCATTER (core_api.h).
 *   inputs:  n NDArray handles, read by the op.
 *   outputs: n NDArray handles written by the op, or NULL for in place
 *            (the inputs are written). Allocated by the caller with the
 *            input's dtype (and shape, except reducescatter's row count).
 *   names:   n full core tensor names (copied).
 *   order_after: an NDArray handle or NULL; if given, the op also writes it
 *            (never its data), so ops passing the same handle run in push
 *            order, each after the previous one has completed.
 * The op keeps its own references to the NDArrays (MXShallowCopyNDArray),
 * so the caller may free its handles at once. Validation happens here, on
 * the calling thread: an unsupported dtype, a non-CPU context, mismatched
 * input/output dtypes or shapes, or the same NDArray twice among the
 * outputs return -1 with hvda_mx_last_error() naming the tensor, and
 * nothing is pushed. Errors found later (the core's enqueue, a cross-rank
 * mismatch, shutdown) fail the engine operation: MXNet raises them as
 * MXNetError when the outputs are read. */
__attribute__((visibility("default"))) int hvda_mx_push(
    int32_t op_type, int32_t n, void* const* inputs, void* const* outputs,
    const char* const* names, int32_t process_set_id, int32_t reduce_op, double prescale,
    double postscale, int32_t root_rank, int32_t priority, void* order_after);

/* Called after every hvd.shutdown(): ops pushed earlier whose inputs are
 * written only afterwards fail instead of being submitted to a later job. */
__attribute__((visibility("default"))) void hvda_mx_end_epoch(void);

/* The message of the last failed call on this thread. */
__attribute__((visibility("default"))) const char* hvda_mx_last_error(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HOROVOD_ACCEL_MXNET_H_ */
