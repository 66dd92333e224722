/*
 * horovod_accel device plugin ABI, version 1.0.
 *
 * A device plugin is a shared library that gives the horovod_accel core one
 * accelerator: its memory, streams, events and the few kernels the core
 * needs (hvda_device_ops_v1), and its collective library
 * (hvda_ccl_ops_v1). The core never links a vendor library; the plugin
 * dlopen()s its own (runtime, collectives) and reports a missing one through
 * hvda_plugin_v1.probe.
 *
 * The boundary is C only: no C++ types, no exceptions, no ownership transfer
 * of memory allocated with a different allocator. Vendors build against this
 * one header (copy it into their tree; it has no other dependency).
 *
 * ---------------------------------------------------------------- versioning
 * - The library exports exactly one entry symbol per ABI major version:
 *       const hvda_plugin_v1* horovod_accel_plugin_v1(uint32_t host_major,
 *                                                     uint32_t host_minor);
 *   A major bump (an incompatible change) adds a new symbol
 *   (horovod_accel_plugin_v2); a core keeps loading the previous major
 *   through a shim for at least one release.
 * - Minor bumps only append fields to the end of a struct. Every struct
 *   below starts with `struct_size` (sizeof the struct the *producer* was
 *   compiled with); a reader treats fields beyond it as absent (NULL / 0).
 *   HVDA_HAS_FIELD(ptr, type, field) is that test.
 * - The entry may return NULL when it cannot serve host_major (the core then
 *   reports the plugin as incompatible); it must not abort the process.
 *
 * ---------------------------------------------------------------- errors
 * Every function returns an hvda_status. On failure the plugin keeps a
 * message for the calling thread, returned by hvda_plugin_v1.last_error()
 * (valid until the next call into the plugin on that thread). Messages say
 * what failed and what to do ("libeccl.so.2 not found: set HOROVOD_ECCL_LIB
 * to its path"). Plugins catch every C++ exception at the boundary.
 *
 * ---------------------------------------------------------------- threading
 * Unless a function says otherwise it may be called from any thread, but the
 * core never calls one object (stream, event, communicator) from two
 * threads at once. Collective calls on one communicator are issued by one
 * thread, in the same order on every rank.
 *
 * ---------------------------------------------------------------- streams
 * Streams and events are the plugin's (e.g. topsStream_t / cudaStream_t
 * behind an opaque handle). Work enqueued on one stream runs in order,
 * asynchronously to the host; the core orders streams only with events
 * (record + stream_wait_event) and detects completion with event_query,
 * never by synchronizing a stream after each operation.
 */
#ifndef HOROVOD_ACCEL_PLUGIN_H_
#define HOROVOD_ACCEL_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HVDA_PLUGIN_ABI_MAJOR 1u
#define HVDA_PLUGIN_ABI_MINOR 0u
#define HVDA_PLUGIN_ENTRY_V1 "horovod_accel_plugin_v1"

#if defined(_WIN32)
#define HVDA_PLUGIN_EXPORT __declspec(dllexport)
#else
#define HVDA_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* Whether `field` of *ptr (a struct starting with struct_size) was filled in
 * by a producer that knew of it. */
#define HVDA_HAS_FIELD(ptr, type, field) \
  ((ptr) != NULL && (ptr)->struct_size >= offsetof(type, field) + sizeof((ptr)->field))

/* ------------------------------------------------------------------ values */

typedef enum hvda_status {
  HVDA_OK = 0,
  HVDA_NOT_READY = 1,        /* event/stream query: work still pending (not an error) */
  HVDA_INVALID_ARGUMENT = 2,
  HVDA_UNSUPPORTED = 3,      /* this (op, dtype, reduce op) or function is not offered */
  HVDA_OUT_OF_MEMORY = 4,
  HVDA_DEVICE_ERROR = 5,     /* the device or its runtime failed */
  HVDA_REMOTE_ERROR = 6,     /* a peer failed or left; the communicator is unusable */
  HVDA_TIMEOUT = 7,
  HVDA_UNAVAILABLE = 8,      /* a vendor library or device is missing */
  HVDA_INTERNAL = 9
} hvda_status;

/* Element types: horovod_accel's numbering (csrc/common/dtype.h). */
typedef enum hvda_dtype {
  HVDA_UINT8 = 0, HVDA_INT8 = 1, HVDA_INT16 = 2, HVDA_INT32 = 3, HVDA_INT64 = 4,
  HVDA_FLOAT16 = 5, HVDA_BFLOAT16 = 6, HVDA_FLOAT32 = 7, HVDA_FLOAT64 = 8, HVDA_BOOL = 9,
  /* Appended after ABI 1.0: a plugin that does not know a dtype answers 0 for it in
   * supports(); data movement (allgather, broadcast, alltoall) runs on bytes. */
  HVDA_UINT16 = 10
} hvda_dtype;

/* Reduction ops: upstream Horovod's numbering. The core never passes
 * HVDA_ADASUM; HVDA_AVERAGE only where supports() said yes (else it runs
 * Sum and scales). */
typedef enum hvda_reduce_op {
  HVDA_AVERAGE = 0, HVDA_SUM = 1, HVDA_ADASUM = 2, HVDA_MIN = 3, HVDA_MAX = 4, HVDA_PRODUCT = 5
} hvda_reduce_op;

typedef enum hvda_collective {
  HVDA_COLL_ALLREDUCE = 0, HVDA_COLL_ALLGATHER = 1, HVDA_COLL_BROADCAST = 2,
  HVDA_COLL_ALLTOALL = 3, HVDA_COLL_REDUCESCATTER = 4, HVDA_COLL_BARRIER = 5,
  HVDA_COLL_SEND_RECV = 6
} hvda_collective;

typedef enum hvda_memcpy_kind {
  HVDA_COPY_HOST_TO_DEVICE = 0, HVDA_COPY_DEVICE_TO_HOST = 1, HVDA_COPY_DEVICE_TO_DEVICE = 2
} hvda_memcpy_kind;

/* Opaque handles owned by the plugin. */
typedef struct hvda_stream_s* hvda_stream_t;
typedef struct hvda_event_s* hvda_event_t;
typedef struct hvda_comm_s* hvda_comm_t;

/* One contiguous copy of a batched copy (fusion buffer pack/unpack). */
typedef struct hvda_copy_desc {
  void* dst;
  const void* src;
  size_t bytes;
} hvda_copy_desc;

/* ------------------------------------------------------------------ host services */

typedef enum hvda_log_level {
  HVDA_LOG_DEBUG = 0, HVDA_LOG_INFO = 1, HVDA_LOG_WARNING = 2, HVDA_LOG_ERROR = 3
} hvda_log_level;

/* What the core offers the plugin (passed to probe and init; valid until
 * finalize). Callbacks get the struct itself, so the core can keep its own
 * context around it (no globals on either side). */
typedef struct hvda_host_api_v1 {
  size_t struct_size;
  uint32_t host_major, host_minor;
  /* Routes a message to the core's log (HOROVOD_LOG_LEVEL applies). */
  void (*log)(const struct hvda_host_api_v1* self, hvda_log_level level, const char* message);
  /* The value of an environment variable as the core sees it; NULL when
   * unset. The plugin reads its HOROVOD_* variables through this, so that
   * `horovodrun --check-build` and the job agree. */
  const char* (*getenv)(const struct hvda_host_api_v1* self, const char* name);
} hvda_host_api_v1;

/* ------------------------------------------------------------------ device ops */

/* Memory, streams, events and kernels of one device kind. All pointers in
 * these calls are device pointers unless named host_*; `device` is the
 * device index (0-based, as the framework numbers it). Required unless
 * marked optional. */
typedef struct hvda_device_ops_v1 {
  size_t struct_size;

  hvda_status (*device_count)(int* count);
  /* Makes `device` current for the calling thread. */
  hvda_status (*set_device)(int device);

  /* Device memory; *ptr is never host-dereferenceable. 0 bytes gives a
   * valid, unique, freeable pointer. */
  hvda_status (*mem_alloc)(int device, size_t bytes, void** ptr);
  /* The core only frees memory that no enqueued work still uses. */
  hvda_status (*mem_free)(int device, void* ptr);
  /* Page-locked host memory, usable as a copy source/target on any stream. */
  hvda_status (*host_alloc)(size_t bytes, void** host_ptr);
  hvda_status (*host_free)(void* host_ptr);

  /* Asynchronous on `stream`; the regions must not overlap. */
  hvda_status (*memcpy_async)(void* dst, const void* src, size_t bytes, hvda_memcpy_kind kind,
                              hvda_stream_t stream);
  hvda_status (*memset_async)(void* dst, int value, size_t bytes, hvda_stream_t stream);

  /* A new non-blocking stream on `device`; destroy it with stream_destroy. */
  hvda_status (*stream_create)(int device, hvda_stream_t* stream);
  /* Wraps a framework's native stream (e.g. the topsStream_t / cudaStream_t
   * behind torch's current stream) without taking ownership: destroying the
   * handle leaves the native stream alone. native == NULL is the device's
   * default stream. */
  hvda_status (*stream_wrap)(int device, void* native, hvda_stream_t* stream);
  hvda_status (*stream_destroy)(hvda_stream_t stream);
  /* Blocks the host until everything enqueued on `stream` has run. */
  hvda_status (*stream_synchronize)(hvda_stream_t stream);
  /* Makes work enqueued on `stream` after this call wait for the point
   * `event` recorded last before this call (recording it again later does
   * not change what this wait waits for: the core reuses events); never
   * blocks the host. */
  hvda_status (*stream_wait_event)(hvda_stream_t stream, hvda_event_t event);

  hvda_status (*event_create)(int device, hvda_event_t* event);
  hvda_status (*event_destroy)(hvda_event_t event);
  /* Captures everything enqueued on `stream` so far. */
  hvda_status (*event_record)(hvda_event_t event, hvda_stream_t stream);
  /* HVDA_OK when the recorded work has run (or nothing was recorded),
   * HVDA_NOT_READY when not yet, an error when the device failed. Clears any
   * sticky NOT_READY state of the vendor runtime. Never blocks. */
  hvda_status (*event_query)(hvda_event_t event);
  hvda_status (*event_synchronize)(hvda_event_t event);

  /* Kernels, enqueued on `stream`:
   * scale: buf[i] *= factor (integers in double, truncated toward zero;
   *   float16/bfloat16 computed in float32);
   * reduce_into: dst[i] = op(dst[i], src[i]) for Sum, Min, Max, Product;
   * batched_copy: every descriptor, device to device, in any order. */
  hvda_status (*scale)(void* buf, int64_t count, hvda_dtype dtype, double factor,
                       hvda_stream_t stream);
  hvda_status (*reduce_into)(void* dst, const void* src, int64_t count, hvda_dtype dtype,
                             hvda_reduce_op op, hvda_stream_t stream);
  hvda_status (*batched_copy)(const hvda_copy_desc* copies, size_t n, hvda_stream_t stream);

  /* Optional: runs fn(arg) on a host thread once the stream's earlier work
   * has run (the core's completion callback). NULL: the core polls events. */
  hvda_status (*launch_host_func)(hvda_stream_t stream, void (*fn)(void* arg), void* arg);
} hvda_device_ops_v1;

/* ------------------------------------------------------------------ collective ops */

/* The device's collective library (NCCL-like). Every collective is enqueued
 * on `stream` and returns once enqueued; completion is observed through an
 * event recorded after it. `count` is in elements of `dtype`. send == recv
 * means in place. Required unless marked optional. */
typedef struct hvda_ccl_ops_v1 {
  size_t struct_size;

  /* Bytes of a unique id (<= 4096). */
  size_t (*unique_id_size)(void);
  /* Called on one rank; the core ships the bytes to the others. */
  hvda_status (*get_unique_id)(void* id, size_t id_bytes);
  /* Collective over nranks processes; blocks until the communicator is up
   * or `timeout_seconds` passed (HVDA_TIMEOUT). */
  hvda_status (*comm_init_rank)(const void* id, size_t id_bytes, int nranks, int rank,
                                int device, double timeout_seconds, hvda_comm_t* comm);
  hvda_status (*comm_destroy)(hvda_comm_t comm);
  /* Makes pending and future operations on comm fail instead of hanging
   * (peer loss, timeout); the communicator must then be destroyed. */
  hvda_status (*comm_abort)(hvda_comm_t comm);
  /* HVDA_OK, or the asynchronous error that broke the communicator
   * (HVDA_REMOTE_ERROR for a lost peer). Never blocks. */
  hvda_status (*comm_get_async_error)(hvda_comm_t comm);

  /* Whether the library offers (collective, dtype, op) natively. op is
   * ignored for non-reducing collectives. The core composes or stages what
   * is not offered (Average = Sum + scale, alltoall = grouped send/recv). */
  int (*supports)(hvda_collective collective, hvda_dtype dtype, hvda_reduce_op op);

  hvda_status (*allreduce)(const void* send, void* recv, size_t count, hvda_dtype dtype,
                           hvda_reduce_op op, hvda_comm_t comm, hvda_stream_t stream);
  /* recv of every rank receives root's send (root: rank in comm). */
  hvda_status (*broadcast)(const void* send, void* recv, size_t count, hvda_dtype dtype, int root,
                           hvda_comm_t comm, hvda_stream_t stream);
  /* recv = concatenation over ranks of send_count elements each. */
  hvda_status (*allgather)(const void* send, void* recv, size_t send_count, hvda_dtype dtype,
                           hvda_comm_t comm, hvda_stream_t stream);
  /* send holds recv_count * nranks elements; rank r receives segment r. */
  hvda_status (*reduce_scatter)(const void* send, void* recv, size_t recv_count, hvda_dtype dtype,
                                hvda_reduce_op op, hvda_comm_t comm, hvda_stream_t stream);
  hvda_status (*send)(const void* buf, size_t count, hvda_dtype dtype, int peer, hvda_comm_t comm,
                      hvda_stream_t stream);
  hvda_status (*recv)(void* buf, size_t count, hvda_dtype dtype, int peer, hvda_comm_t comm,
                      hvda_stream_t stream);
  /* Calls between group_start and group_end are issued together (needed
   * for send/recv patterns to progress). */
  hvda_status (*group_start)(void);
  hvda_status (*group_end)(void);

  /* Optional (NULL: the core composes them from the required calls).
   * Counts and displacements are host arrays of nranks elements, in
   * elements of dtype. */
  hvda_status (*allgatherv)(const void* send, size_t send_count, void* recv,
                            const size_t* recv_counts, const size_t* recv_displs,
                            hvda_dtype dtype, hvda_comm_t comm, hvda_stream_t stream);
  hvda_status (*alltoallv)(const void* send, const size_t* send_counts, const size_t* send_displs,
                           void* recv, const size_t* recv_counts, const size_t* recv_displs,
                           hvda_dtype dtype, hvda_comm_t comm, hvda_stream_t stream);
} hvda_ccl_ops_v1;

/* ------------------------------------------------------------------ the plugin */

typedef struct hvda_plugin_v1 {
  size_t struct_size;
  uint32_t abi_major, abi_minor;  /* what the plugin was built against */
  const char* name;               /* "gcu", "cuda": HOROVOD_ACCEL_PLUGINS and logs */
  const char* version;            /* the plugin's own version */
  /* The framework's device type for tensors on this device ("gcu" is torch's
   * PrivateUse1 name of Enflame's extension, "cuda"). */
  const char* device_type;

  /* Whether the plugin can work here without initializing anything:
   * HVDA_OK, or HVDA_UNAVAILABLE with a message through last_error() naming
   * what is missing (a library and the variable that points to it, no
   * device). Cheap and side-effect free; `--check-build` calls it. */
  hvda_status (*probe)(const hvda_host_api_v1* host);
  /* Loads the vendor libraries; once per process before any other call
   * except probe and last_error. host stays valid until finalize. */
  hvda_status (*init)(const hvda_host_api_v1* host);
  hvda_status (*finalize)(void);
  /* The calling thread's message for the last failed call ("" if none). */
  const char* (*last_error)(void);

  const hvda_device_ops_v1* device;
  const hvda_ccl_ops_v1* ccl;
} hvda_plugin_v1;

/* The entry symbol (see "versioning" above). */
typedef const hvda_plugin_v1* (*hvda_plugin_entry_v1)(uint32_t host_major, uint32_t host_minor);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* HOROVOD_ACCEL_PLUGIN_H_ */
