/*
 * horovod_accel core C API, version 1.2: how framework kernels (the
 * TensorFlow op library, csrc/tensorflow/; the JAX FFI handlers, csrc/jax/) reach the core's Runtime without
 * linking it and without any C++ type crossing the boundary.
 *
 * The _core extension owns one table (hvda_core_api_v1) and hands out its
 * address together with the address of a Runtime:
 *     _core.Runtime.c_api() -> (table address, runtime address)
 * A framework library receives both through its own exported setter (the
 * TensorFlow library's hvda_tf_set_core_api, called by Python with ctypes).
 * Both stay valid for the life of the process: the table is static, and the
 * Python layer keeps its one default Runtime alive until exit (init() and
 * shutdown() reuse the same object).
 *
 * ---------------------------------------------------------------- versioning
 * Every struct starts with `struct_size` (sizeof the struct its producer was
 * compiled with); fields are only ever appended (minor bump). A reader treats
 * fields beyond struct_size as absent: HVDA_CORE_HAS_FIELD(ptr, type, field).
 * An incompatible change bumps HVDA_CORE_API_MAJOR; a consumer refuses a
 * table whose `major` differs from the one it was built with.
 *
 * ---------------------------------------------------------------- errors
 * Functions return an hvda_core_status. On failure the core keeps a message
 * for the calling thread, returned by last_error() (valid until the next call
 * into the table on that thread). No C++ exception crosses the boundary.
 *
 * ---------------------------------------------------------------- completion
 * enqueue() never blocks on communication. When it returns HVDA_CORE_OK the
 * core calls each op's `done` exactly once: from the core's background
 * thread, or from a peer-failure path, or -- when the runtime had already
 * failed -- synchronously inside enqueue() on the calling thread. `done` must
 * not block and must not call enqueue() of the same runtime. When enqueue()
 * fails, no `done` is called for any op of that call.
 * Before `done` runs, the op's name is released (a new op may reuse it at
 * once: frameworks have no synchronize() that would release it).
 *
 * enqueue_wait() (1.1) is the blocking form for callers that may block their
 * thread until the op is done (an XLA custom call): see its comment.
 */
#ifndef HOROVOD_ACCEL_CORE_API_H_
#define HOROVOD_ACCEL_CORE_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HVDA_CORE_API_MAJOR 1
#define HVDA_CORE_API_MINOR 2

#define HVDA_CORE_HAS_FIELD(ptr, type, field) \
  ((ptr) != NULL && (ptr)->struct_size >= offsetof(type, field) + sizeof((ptr)->field))

/* Status codes (equal to the core's hvda::StatusCode; never renumbered). */
typedef enum hvda_core_status {
  HVDA_CORE_OK = 0,
  HVDA_CORE_UNKNOWN = 1,
  HVDA_CORE_PRECONDITION = 2,     /* cross-rank mismatch found during negotiation */
  HVDA_CORE_ABORTED = 3,          /* shut down, or a peer / the transport failed */
  HVDA_CORE_INVALID_ARGUMENT = 4, /* the caller's fault, detected on this rank */
  HVDA_CORE_TIMEOUT = 5,
  HVDA_CORE_UNAVAILABLE = 6,
  HVDA_CORE_UNIMPLEMENTED = 7     /* a valid request this build does not offer */
} hvda_core_status;

/* Operation kinds (the core's RequestType values). */
typedef enum hvda_core_op_type {
  HVDA_CORE_ALLREDUCE = 0,
  HVDA_CORE_ALLGATHER = 1,
  HVDA_CORE_BROADCAST = 2,
  HVDA_CORE_ALLTOALL = 5,
  HVDA_CORE_REDUCESCATTER = 7
} hvda_core_op_type;

/* Element types (the core's DataType values, `_core.DTYPE_*`):
 * uint8 0, int8 1, int16 2, int32 3, int64 4, float16 5, bfloat16 6,
 * float32 7, float64 8, bool 9, uint16 10.
 * Reduce ops (upstream's numbering, `_core.OP_*`): Average 0, Sum 1,
 * Adasum 2, Min 3, Max 4, Product 5. */

/* What `done` receives. Every pointer in it is owned by the core and valid
 * only while `done` runs: copy what you keep. */
typedef struct hvda_core_result {
  size_t struct_size;
  int32_t status;            /* hvda_core_status */
  const char* message;       /* NUL-terminated; "" on success */
  /* Core-allocated outputs (allgather, alltoall): the result bytes, their
   * shape and, for alltoall, the rows received from each rank. NULL / 0 for
   * ops that wrote into the caller's output buffer. */
  const void* output;
  size_t output_bytes;
  const int64_t* output_shape;
  int32_t output_ndim;
  const int64_t* received_splits;
  int32_t num_received_splits;
  int32_t join_result;       /* join: the global rank that joined last */
} hvda_core_result;

typedef void (*hvda_core_done_fn)(void* user, const hvda_core_result* result);

/* (1.2) Lends the core the buffer for a core-sized result (allgather,
 * alltoall): called at most once per op, on a core thread, before the
 * collective runs, with the result's shape and size. Return 0 and set *data
 * to `bytes` bytes in the op's memory (the op's device for device ops) that
 * stay valid until `done`; or return nonzero with a NUL-terminated message in
 * *message (static or valid until the op's `done`), which fails the op. Must
 * not block on communication or call into the table. */
typedef int32_t (*hvda_core_alloc_fn)(void* user, const int64_t* shape, int32_t ndim,
                                      size_t bytes, void** data, const char** message);

/* One operation. Buffers are C-contiguous, owned by the caller and must stay
 * valid until `done` has been called. They are host memory unless
 * `device_type` (1.1) names an accelerator. */
typedef struct hvda_core_op {
  size_t struct_size;
  int32_t type;              /* hvda_core_op_type */
  const char* name;          /* full core tensor name; copied by enqueue() */
  int32_t process_set_id;    /* 0: the global set */
  const void* input;
  void* output;              /* allreduce / broadcast / reducescatter (may equal input for
                                allreduce and broadcast); NULL for core-allocated outputs */
  int32_t dtype;
  const int64_t* shape;      /* ndim entries; copied by enqueue() */
  int32_t ndim;
  int32_t reduce_op;         /* allreduce / reducescatter */
  double prescale;
  double postscale;
  int32_t root_rank;         /* broadcast: a global rank */
  const int64_t* splits;     /* alltoall: rows per destination; NULL = equal split */
  int32_t num_splits;
  hvda_core_done_fn done;    /* required */
  void* done_user;
  /* ---- 1.1 ---- */
  /* NULL (and for 1.0 callers): input/output are host memory. Else the
   * accelerator type a device plugin serves (e.g. "cuda"); input/output are
   * that device's memory, on device index `device`. The core reads the input
   * only after the framework's native `stream` (NULL: the device's default
   * stream) has reached the point where the op was enqueued (it records an
   * event there), and the op completes once the output is written. Device
   * allgather and alltoall need `allocate_output` (1.2): the core has no
   * device buffer to lend through hvda_core_result. */
  const char* device_type;
  int32_t device;
  void* stream;
  /* ---- 1.2 ---- */
  /* NULL: `stream` is the device's native stream handle. Else the kind of
   * framework object `stream` is, which the device's plugin maps to its
   * native stream (plugin.h, stream_from_framework): "tensorflow" = a
   * PluggableDevice SP_Stream from TF_GetStream. */
  const char* stream_framework;
  /* allgather / alltoall, host or device: NULL = the core allocates the
   * result and lends it to `done` (host ops only); else the core asks for the
   * framework's buffer and writes the result straight into it, and `done`
   * gets output == NULL. */
  hvda_core_alloc_fn allocate_output;
  void* allocate_user;
} hvda_core_op;

/* Topology queries for hvda_core_api_v1.topology. */
typedef enum hvda_core_topology_field {
  HVDA_CORE_RANK = 0,
  HVDA_CORE_SIZE = 1,
  HVDA_CORE_LOCAL_RANK = 2,
  HVDA_CORE_LOCAL_SIZE = 3,
  HVDA_CORE_CROSS_RANK = 4,
  HVDA_CORE_CROSS_SIZE = 5
} hvda_core_topology_field;

typedef struct hvda_core_runtime hvda_core_runtime; /* opaque: an hvda::Runtime */

typedef struct hvda_core_api_v1 {
  size_t struct_size;
  int32_t major;
  int32_t minor;
  /* The message of the last failed call on this thread. */
  const char* (*last_error)(void);
  /* Validates and enqueues n >= 1 ops atomically; n > 1 forms a group
   * (negotiated and fused together; all ops of one call must use the same
   * process set). */
  int32_t (*enqueue)(hvda_core_runtime* rt, const hvda_core_op* ops, int32_t n);
  /* join(): `done` gets join_result. device: -1 for CPU. */
  int32_t (*enqueue_join)(hvda_core_runtime* rt, int32_t device, hvda_core_done_fn done,
                          void* done_user);
  int32_t (*enqueue_barrier)(hvda_core_runtime* rt, int32_t process_set_id,
                             hvda_core_done_fn done, void* done_user);
  /* *out = the field; HVDA_CORE_INVALID_ARGUMENT if not initialized. */
  int32_t (*topology)(hvda_core_runtime* rt, int32_t field, int32_t* out);
  /* Process-set queries; INVALID_ARGUMENT for an unknown set.
   * *rank is -1 when this rank is not a member. */
  int32_t (*process_set_included)(hvda_core_runtime* rt, int32_t id, int32_t* included);
  int32_t (*process_set_rank)(hvda_core_runtime* rt, int32_t id, int32_t* rank);
  int32_t (*process_set_size)(hvda_core_runtime* rt, int32_t id, int32_t* size);

  /* ---- 1.1 ---- */
  /* Enqueues like enqueue() (same validation, same group rule), then blocks
   * the calling thread until every op of the call has completed, running the
   * core's negotiation cycles on this thread meanwhile, as the Python
   * adapters' synchronize() does (NOTE [Inline cycles], cycle_loop.h): a small
   * op completes without a hand-off to the background thread, and this thread
   * counts as waiting for the deadlock detection. Each op's `done` is called
   * on the calling thread, in op order, after all ops completed and before
   * enqueue_wait returns; `done` may therefore block or copy at leisure.
   * Returns HVDA_CORE_OK when the ops were enqueued (their outcomes go to
   * `done`), else the enqueue failure (no `done` called). Never call it from
   * a `done` callback or from a core thread. */
  int32_t (*enqueue_wait)(hvda_core_runtime* rt, const hvda_core_op* ops, int32_t n);

  /* ---- 1.2 ---- */
  /* enqueue_join / enqueue_barrier, then wait like enqueue_wait: `done` is
   * called on the calling thread before they return, and the thread counts as
   * waiting for the deadlock detection meanwhile. */
  int32_t (*enqueue_join_wait)(hvda_core_runtime* rt, int32_t device, hvda_core_done_fn done,
                               void* done_user);
  int32_t (*enqueue_barrier_wait)(hvda_core_runtime* rt, int32_t process_set_id,
                                  hvda_core_done_fn done, void* done_user);
} hvda_core_api_v1;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HOROVOD_ACCEL_CORE_API_H_ */
