/* A loader fixture: a device plugin on host memory with immediate execution,
 * built by CMake in several variants to test how the core opens, validates
 * and probes plugins (tests/cpp/plugin_loader_test.cc, --check-build tests).
 * It is not a device: its kernels and collectives answer HVDA_UNSUPPORTED.
 *
 * Variants (compile definitions):
 *   FIXTURE_UNAVAILABLE  probe() says a vendor library is missing
 *   FIXTURE_ABI_MAJOR=N  claims plugin ABI N.0
 *   FIXTURE_NO_RECV      leaves ccl.recv NULL
 *   FIXTURE_NO_ENTRY     exports no entry symbol
 */
#include <stdlib.h>
#include <string.h>

#include "horovod_accel/plugin.h"

#ifndef FIXTURE_ABI_MAJOR
#define FIXTURE_ABI_MAJOR HVDA_PLUGIN_ABI_MAJOR
#endif

static __thread const char* last_message = "";

static hvda_status fail(hvda_status s, const char* message) {
  last_message = message;
  return s;
}

static const char* fx_last_error(void) { return last_message; }

static hvda_status fx_probe(const hvda_host_api_v1* host) {
#ifdef FIXTURE_UNAVAILABLE
  (void)host;
  return fail(HVDA_UNAVAILABLE,
              "libfixture_runtime.so.1 not found: set HOROVOD_FIXTURE_RUNTIME_LIB to its path");
#else
  if (host != NULL && host->getenv != NULL && host->getenv(host, "HVDA_FIXTURE_FAIL_PROBE"))
    return fail(HVDA_UNAVAILABLE, "HVDA_FIXTURE_FAIL_PROBE is set");
  return HVDA_OK;
#endif
}

static hvda_status fx_init(const hvda_host_api_v1* host) { return fx_probe(host); }
static hvda_status fx_finalize(void) { return HVDA_OK; }

/* ---------------------------------------------------------------- device */

static hvda_status fx_device_count(int* n) { *n = 1; return HVDA_OK; }
static hvda_status fx_set_device(int d) {
  return d == 0 ? HVDA_OK : fail(HVDA_INVALID_ARGUMENT, "the fixture has device 0 only");
}
static hvda_status fx_alloc(int d, size_t n, void** p) {
  (void)d;
  *p = malloc(n ? n : 1);
  return *p ? HVDA_OK : fail(HVDA_OUT_OF_MEMORY, "malloc failed");
}
static hvda_status fx_free(int d, void* p) { (void)d; free(p); return HVDA_OK; }
static hvda_status fx_host_alloc(size_t n, void** p) { return fx_alloc(0, n, p); }
static hvda_status fx_host_free(void* p) { free(p); return HVDA_OK; }
static hvda_status fx_memcpy(void* dst, const void* src, size_t n, hvda_memcpy_kind k,
                             hvda_stream_t s) {
  (void)k; (void)s;
  memcpy(dst, src, n);
  return HVDA_OK;
}
static hvda_status fx_memset(void* dst, int v, size_t n, hvda_stream_t s) {
  (void)s;
  memset(dst, v, n);
  return HVDA_OK;
}
/* Streams and events are trivial: every call runs at once. */
static struct hvda_stream_s* const kStream = (struct hvda_stream_s*)1;
static struct hvda_event_s* const kEvent = (struct hvda_event_s*)1;
static hvda_status fx_stream_create(int d, hvda_stream_t* s) { (void)d; *s = kStream; return HVDA_OK; }
static hvda_status fx_stream_wrap(int d, void* native, hvda_stream_t* s) {
  (void)d; (void)native; *s = kStream; return HVDA_OK;
}
static hvda_status fx_stream_ok(hvda_stream_t s) { (void)s; return HVDA_OK; }
static hvda_status fx_stream_wait(hvda_stream_t s, hvda_event_t e) { (void)s; (void)e; return HVDA_OK; }
static hvda_status fx_event_create(int d, hvda_event_t* e) { (void)d; *e = kEvent; return HVDA_OK; }
static hvda_status fx_event_ok(hvda_event_t e) { (void)e; return HVDA_OK; }
static hvda_status fx_event_record(hvda_event_t e, hvda_stream_t s) { (void)e; (void)s; return HVDA_OK; }
static hvda_status fx_scale(void* b, int64_t n, hvda_dtype t, double f, hvda_stream_t s) {
  (void)b; (void)n; (void)t; (void)f; (void)s;
  return fail(HVDA_UNSUPPORTED, "the loader fixture has no kernels");
}
static hvda_status fx_reduce(void* d, const void* src, int64_t n, hvda_dtype t, hvda_reduce_op op,
                             hvda_stream_t s) {
  (void)d; (void)src; (void)n; (void)t; (void)op; (void)s;
  return fail(HVDA_UNSUPPORTED, "the loader fixture has no kernels");
}
static hvda_status fx_batched_copy(const hvda_copy_desc* c, size_t n, hvda_stream_t s) {
  (void)s;
  for (size_t i = 0; i < n; ++i) memcpy(c[i].dst, c[i].src, c[i].bytes);
  return HVDA_OK;
}

static const hvda_device_ops_v1 kDevice = {
    sizeof(hvda_device_ops_v1), fx_device_count, fx_set_device, fx_alloc, fx_free,
    fx_host_alloc, fx_host_free, fx_memcpy, fx_memset, fx_stream_create, fx_stream_wrap,
    fx_stream_ok, fx_stream_ok, fx_stream_wait, fx_event_create, fx_event_ok, fx_event_record,
    fx_event_ok, fx_event_ok, fx_scale, fx_reduce, fx_batched_copy, NULL};

/* ---------------------------------------------------------------- ccl */

static hvda_status unsupported(void) {
  return fail(HVDA_UNSUPPORTED, "the loader fixture has no collectives");
}
static size_t fx_id_size(void) { return 16; }
static hvda_status fx_get_id(void* id, size_t n) { memset(id, 7, n); return HVDA_OK; }
static hvda_status fx_comm_init(const void* id, size_t n, int nranks, int rank, int d, double t,
                                hvda_comm_t* c) {
  (void)id; (void)n; (void)nranks; (void)rank; (void)d; (void)t; (void)c;
  return unsupported();
}
static hvda_status fx_comm_op(hvda_comm_t c) { (void)c; return unsupported(); }
static int fx_supports(hvda_collective c, hvda_dtype t, hvda_reduce_op op) {
  (void)c; (void)t; (void)op;
  return 0;
}
static hvda_status fx_allreduce(const void* s, void* r, size_t n, hvda_dtype t, hvda_reduce_op op,
                                hvda_comm_t c, hvda_stream_t st) {
  (void)s; (void)r; (void)n; (void)t; (void)op; (void)c; (void)st;
  return unsupported();
}
static hvda_status fx_broadcast(const void* s, void* r, size_t n, hvda_dtype t, int root,
                                hvda_comm_t c, hvda_stream_t st) {
  (void)s; (void)r; (void)n; (void)t; (void)root; (void)c; (void)st;
  return unsupported();
}
static hvda_status fx_allgather(const void* s, void* r, size_t n, hvda_dtype t, hvda_comm_t c,
                                hvda_stream_t st) {
  (void)s; (void)r; (void)n; (void)t; (void)c; (void)st;
  return unsupported();
}
static hvda_status fx_send(const void* b, size_t n, hvda_dtype t, int peer, hvda_comm_t c,
                           hvda_stream_t st) {
  (void)b; (void)n; (void)t; (void)peer; (void)c; (void)st;
  return unsupported();
}
static hvda_status fx_recv(void* b, size_t n, hvda_dtype t, int peer, hvda_comm_t c,
                           hvda_stream_t st) {
  (void)b; (void)n; (void)t; (void)peer; (void)c; (void)st;
  return unsupported();
}
static hvda_status fx_group(void) { return HVDA_OK; }

static const hvda_ccl_ops_v1 kCcl = {
    sizeof(hvda_ccl_ops_v1), fx_id_size, fx_get_id, fx_comm_init, fx_comm_op, fx_comm_op,
    fx_comm_op, fx_supports, fx_allreduce, fx_broadcast, fx_allgather, fx_allreduce, fx_send,
#ifdef FIXTURE_NO_RECV
    NULL,
#else
    fx_recv,
#endif
    fx_group, fx_group, NULL, NULL};

static const hvda_plugin_v1 kPlugin = {
    sizeof(hvda_plugin_v1), FIXTURE_ABI_MAJOR, 0, "fixture", "0.0.1", "fixture",
    fx_probe, fx_init, fx_finalize, fx_last_error, &kDevice, &kCcl};

#ifndef FIXTURE_NO_ENTRY
HVDA_PLUGIN_EXPORT const hvda_plugin_v1* horovod_accel_plugin_v1(uint32_t host_major,
                                                                 uint32_t host_minor) {
  (void)host_major; (void)host_minor;
  return &kPlugin;
}
#endif
