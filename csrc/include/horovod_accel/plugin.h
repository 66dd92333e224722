/*
 * horovod_accel device plugin ABI, version 1.2 (1.0 plus appended, optional
 * fields; a plugin built against 1.0 or 1.1 loads unchanged, see "versioning").
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
 * - The entry may return NULL when it cannot serve host_major - or a
 *   host_minor older than the fields it relies on (a plugin that leaves
 *   scale NULL needs a 1.1 core) - and the core then reports the plugin as
 *   incompatible; it must not abort the process.
 * - A core uses a field added in 1.x only when the plugin's abi_minor is at
 *   least x *and* the table's struct_size covers it; otherwise it behaves as
 *   the 1.0 text below says. Fields added in 1.1 are marked "ABI 1.1", in
 *   1.2 "ABI 1.2".
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
 * thread (the core's background thread), in the same order on every rank.
 *
 * ---------------------------------------------------------------- streams
 * Streams and events are the plugin's (e.g. topsStream_t / cudaStream_t
 * behind an opaque handle). Work enqueued on one stream runs in order,
 * asynchronously to the host; the core orders streams only with events
 * (record + stream_wait_event) and detects completion with event_query,
 * never by synchronizing a stream after each operation.
 * - Frameworks without streams: the core receives native handle 0 (NULL) and
 *   calls stream_wrap(device, NULL, ...), which is the device's default
 *   stream: the one the framework's own device work is ordered on. A plugin
 *   whose framework runs device work synchronously may return a handle on
 *   which work runs at once (an event recorded there is complete at once);
 *   the core wraps NULL any number of times and destroys each wrapper.
 * - What the core does on which stream: on a stream it created
 *   (stream_create: one per communicator, see "Communicators") it issues
 *   every collective of that communicator, its copies and kernels, and
 *   stream_wait_event; on a wrapped framework stream it only enqueues
 *   copies, records events and synchronizes - it never makes a wrapped
 *   stream wait for an event, so an immediate stream never has to block.
 * - Failures: the core treats an event that reports HVDA_OK as "everything
 *   before it ran successfully". An event recorded (on any stream) after
 *   work that failed while running - a collective whose peer was lost or
 *   that timed out, a failed kernel - must report an error from event_query
 *   and event_synchronize (the failed call's status: HVDA_REMOTE_ERROR,
 *   HVDA_TIMEOUT, HVDA_DEVICE_ERROR...), never HVDA_OK, with last_error()
 *   saying what failed; the error may stay sticky on that stream. Only after
 *   the core called comm_abort may events of the aborted communicator's
 *   work complete with HVDA_OK (results undefined): the core has failed
 *   those operations itself by then. A call that fails at enqueue time
 *   (returns non-OK) must leave nothing enqueued that can block the stream.
 *   Like HVDA_OK, an error is reported only once the stream has reached the
 *   recorded position (the work ahead of it ran or failed): the core may
 *   free or reuse memory that work used as soon as the event reports.
 *
 * ---------------------------------------------------------------- timeouts
 * The core's HOROVOD_ACCEL_TIMEOUT_SECONDS (default 300; 0 = no limit) is
 * how long one collective may run (the core measures from when it issued
 * the operation; a plugin bounds each of its own waits). ABI 1.1 hands it to the plugin at
 * communicator creation (hvda_comm_config_v1.op_timeout_seconds). The core's
 * watchdog fails every pending operation and calls comm_abort once the
 * oldest has run that long or comm_get_async_error reports an error; at
 * shutdown it aborts communicators whose work is still in flight.
 * - A library with a true abort (NCCL's ncclCommAbort) makes pending work
 *   finish at once in comm_abort.
 * - A library without one (most host transports, e.g. Gloo) must bound every
 *   wait of its own - a send, a receive, a rendezvous step - by
 *   op_timeout_seconds and then fail the operation with HVDA_TIMEOUT (the
 *   stream goes on: later waits on it end, its events report the error);
 *   comm_abort then only has to make later operations fail at once.
 * - Either way stream_synchronize, event_synchronize, comm_destroy,
 *   stream_destroy and finalize must return within op_timeout_seconds of the
 *   stuck operation's start. The core waits for a communication stream at
 *   teardown at most op_timeout_seconds + a grace period (a few seconds);
 *   past that it leaks the stream, its memory and the communicator (never
 *   calls mem_free, comm_destroy or stream_destroy on them) and goes on.
 */
#ifndef HOROVOD_ACCEL_PLUGIN_H_
#define HOROVOD_ACCEL_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HVDA_PLUGIN_ABI_MAJOR 1u
#define HVDA_PLUGIN_ABI_MINOR 2u
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
 * HVDA_ADASUM, and (ABI 1.0 and 1.1) never HVDA_AVERAGE either: it runs Sum
 * and then the scale kernel; supports() is not asked about them. */
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

  /* Device memory. The core never dereferences *ptr on the host (unless
   * memory_host_accessible, ABI 1.1, says it may); it only passes it back to
   * this plugin. 0 bytes gives a valid, unique, freeable pointer. */
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
  /* (native == NULL also when the framework has no streams: see "streams".) */
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
   * batched_copy: every descriptor, device to device, in any order.
   * scale and reduce_into may be NULL when memory_host_accessible (ABI 1.1)
   * is set: the core then supplies them (below). */
  hvda_status (*scale)(void* buf, int64_t count, hvda_dtype dtype, double factor,
                       hvda_stream_t stream);
  hvda_status (*reduce_into)(void* dst, const void* src, int64_t count, hvda_dtype dtype,
                             hvda_reduce_op op, hvda_stream_t stream);
  hvda_status (*batched_copy)(const hvda_copy_desc* copies, size_t n, hvda_stream_t stream);

  /* Optional: runs fn(arg) on a host thread once the stream's earlier work
   * has run (the core's completion callback). NULL: the core polls events. */
  hvda_status (*launch_host_func)(hvda_stream_t stream, void (*fn)(void* arg), void* arg);

  /* ABI 1.1, optional (0 when absent). Nonzero: memory from mem_alloc is
   * ordinary host memory of this process - the host may read and write it
   * once the work enqueued on it has run, and work enqueued after a host
   * write sees that write. The core may then leave scale and reduce_into to
   * itself: where this plugin's are NULL (the loader accepts that only with
   * this flag), the core synchronizes the stream and runs its own host
   * kernels (every dtype and op the CPU path has) on the calling thread.
   * That costs a stream synchronization per kernel; a plugin that wants
   * them asynchronous implements them. */
  uint32_t memory_host_accessible;

  /* ABI 1.2, optional (NULL: not offered). Maps a framework's own stream
   * object on this plugin's device to the native stream that stream_wrap
   * accepts, for frameworks that hand kernels something other than the
   * native handle. `framework` names the kind of object:
   *   "tensorflow"  a TensorFlow PluggableDevice SP_Stream (what TF_GetStream
   *                 returns to a kernel running on the device of the vendor's
   *                 TensorFlow plugin). Its layout is that TF plugin's own,
   *                 so only the vendor knows how to read it.
   * On HVDA_OK *native is the native stream (not owned; it lives as long as
   * the framework's stream). Unknown kinds, or a framework plugin this
   * plugin cannot read (not loaded, too old), return HVDA_UNAVAILABLE with a
   * message saying what is missing. Called from framework threads, possibly
   * concurrently; must not block on device work. */
  hvda_status (*stream_from_framework)(int device, const char* framework, void* framework_stream,
                                       void** native);
} hvda_device_ops_v1;

/* ------------------------------------------------------------------ collective ops */

/* What the core passes at communicator creation (ABI 1.1,
 * comm_init_rank_config). Produced by the core: struct_size is the core's;
 * fields past it are absent (0). Valid during the call only. */
typedef struct hvda_comm_config_v1 {
  size_t struct_size;
  /* As comm_init_rank's timeout_seconds: how long creation may block. */
  double init_timeout_seconds;
  /* HOROVOD_ACCEL_TIMEOUT_SECONDS: how long one collective may run before
   * the core aborts the communicator (see "timeouts"); 0 = no limit. */
  double op_timeout_seconds;
} hvda_comm_config_v1;

/* The device's collective library (NCCL-like). Every collective is enqueued
 * on `stream` and returns once enqueued; completion is observed through an
 * event recorded after it. `count` is in elements of `dtype`. send == recv
 * means in place. Required unless marked optional.
 *
 * Communicators: the core makes one per process set that runs device
 * collectives (the global set first), when the set's first device response
 * runs - collectively, on every member, in the same order. Ranks are
 * positions in the process set (0..nranks-1), which may span hosts.
 * Every collective of one communicator is enqueued on the one stream the
 * core created for it, by the one thread that issues them, so a library
 * may rely on their order being the same on every rank. comm_get_async_error
 * and comm_abort come from that same thread (or, at teardown, after it
 * stopped): never concurrently with a collective call on the communicator.
 * comm_destroy is called only once the communicator's stream has drained
 * (or never, when the core abandoned it: see "timeouts"). */
typedef struct hvda_ccl_ops_v1 {
  size_t struct_size;

  /* Bytes of a unique id (1..4096). */
  size_t (*unique_id_size)(void);
  /* Called exactly once per communicator, in the process that will be its
   * rank 0, before any rank calls comm_init_rank with it; never reused for
   * a second communicator. The core ships the bytes unchanged through its
   * rendezvous store to the other ranks, which may be on other hosts: an id
   * must mean the same on every host of the job (an address and port, not a
   * path of a host-local file system). See unique_id_release. */
  hvda_status (*get_unique_id)(void* id, size_t id_bytes);
  /* Collective over nranks processes; blocks until the communicator is up
   * on every rank (so that no rank still needs the id's resources) or
   * `timeout_seconds` (> 0 from the core) passed (HVDA_TIMEOUT). Every rank calls it exactly once
   * per id. */
  hvda_status (*comm_init_rank)(const void* id, size_t id_bytes, int nranks, int rank,
                                int device, double timeout_seconds, hvda_comm_t* comm);
  hvda_status (*comm_destroy)(hvda_comm_t comm);
  /* Makes pending and future operations on comm fail instead of hanging
   * (peer loss, timeout); the communicator must then be destroyed. Without
   * a true abort, see "timeouts": pending work ends when its bounded waits
   * expire. Never blocks beyond that. */
  hvda_status (*comm_abort)(hvda_comm_t comm);
  /* HVDA_OK, or the asynchronous error that broke the communicator
   * (HVDA_REMOTE_ERROR for a lost peer). Never blocks. */
  hvda_status (*comm_get_async_error)(hvda_comm_t comm);

  /* Whether the library offers (collective, dtype, op) natively: nonzero
   * yes. op is ignored for non-reducing collectives. What the core asks:
   * - ALLREDUCE and REDUCESCATTER: per (dtype, op), op Sum/Min/Max/Product;
   * - ALLGATHER, BROADCAST and SEND_RECV: with HVDA_UINT8 only (the core
   *   moves bytes); SEND_RECV covers send, recv and groups of them;
   * - ALLTOALL and BARRIER: never (ABI 1.0 and 1.1). Alltoall is alltoallv
   *   where non-NULL, else grouped send/recv if SEND_RECV is supported; a
   *   barrier is a 1-element int32 Sum allreduce (and Horovod's barrier()
   *   runs in negotiation, not on the device).
   * Where the library lacks something, the core composes it from other
   * calls of this plugin on device memory ("composes"; the word "stages"
   * in 1.0's text meant the same): Average = Sum + scale, uneven
   * reduce-scatter = allreduce of a copy, uneven allgather = allgatherv or
   * grouped broadcasts, alltoall as above. It never moves device data
   * through host memory to run a collective elsewhere: what neither the
   * library nor a composition offers fails with an error naming it. */
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
  /* Point-to-point, always inside a group (below). peer is never the
   * caller's own rank: the core copies its own part of an alltoall itself
   * (memcpy_async, device to device), so a library need not connect a rank
   * to itself (ABI 1.1's rule; a 1.0 core passed the caller's own rank). */
  hvda_status (*send)(const void* buf, size_t count, hvda_dtype dtype, int peer, hvda_comm_t comm,
                      hvda_stream_t stream);
  hvda_status (*recv)(void* buf, size_t count, hvda_dtype dtype, int peer, hvda_comm_t comm,
                      hvda_stream_t stream);
  /* Calls between group_start and group_end are issued together (needed
   * for send/recv patterns to progress): nothing in a group may wait for a
   * later call of the same group. What the core does (and all it does):
   * - groups are per thread, as NCCL's: both calls and everything between
   *   them come from the one thread that issues the communicator's
   *   collectives; groups are never nested and never span two operations;
   * - one group holds calls on one communicator and one stream only;
   * - a group holds either only send/recv (alltoall without alltoallv: for
   *   each peer in rank order a send then a recv, each skipped when 0
   *   bytes; at most one of each per peer; possibly none at all), or only
   *   broadcasts (uneven allgather without allgatherv: one per rank, roots
   *   0..nranks-1 in order, each rank passing its own counts);
   * - when a call inside fails, the core still calls group_end, then
   *   reports the first failure; group_end enqueues what was issued. */
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

  /* ABI 1.1, optional. Releases what get_unique_id acquired for `id` (a
   * rendezvous directory, a listening port). Called exactly once per id, in
   * the process that made it, once that process's comm_init_rank with it
   * returned (HVDA_OK or not) - or without one when the core failed to
   * publish the id. By then, on success, every rank has joined (see
   * comm_init_rank); on failure peers may still be inside comm_init_rank and
   * must then fail rather than crash. NULL: ids hold no resources (NCCL's).
   * A process that dies never calls it: prefer ids whose resources the
   * system reclaims with the process (a socket, not a file). */
  hvda_status (*unique_id_release)(const void* id, size_t id_bytes);
  /* ABI 1.1, optional. comm_init_rank with the core's settings for the
   * communicator (config->op_timeout_seconds: see "timeouts"). Where
   * non-NULL the core calls it instead of comm_init_rank; comm_init_rank
   * stays required (a 1.0 core calls only that). */
  hvda_status (*comm_init_rank_config)(const void* id, size_t id_bytes, int nranks, int rank,
                                       int device, const hvda_comm_config_v1* config,
                                       hvda_comm_t* comm);
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
  /* At process exit. Communicators the core leaked after a stuck teardown
   * (see "timeouts") may still exist: finalize must not wait for them. The
   * core never unloads a plugin after it abandoned any of its objects, so
   * threads still running the plugin's code may outlive finalize. */
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
