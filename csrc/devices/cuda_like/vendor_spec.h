// What distinguishes one CUDA-like vendor from another for the shared plugin
// implementation in this folder: library names and the variables that
// override them, the symbol name of every runtime and collective function
// the plugin calls, and the few enum values that differ. A vendor directory
// (csrc/devices/gcu, csrc/devices/cuda, ...) fills one VendorSpec with its
// names and exports the entry symbol through MakeVendorPlugin; every vendor
// name stays in that directory. The signatures behind the names are fixed
// (vendor_api.h) and are those of the CUDA runtime / NCCL family, which TOPS
// + ECCL, HIP + RCCL and others mirror.
//
// Lifetime: a VendorSpec is a constant with static storage duration.
#pragma once

#include <cstddef>

namespace hvda {
namespace vendor {

struct RuntimeSymbols {
  const char* get_device_count;  // (int*)
  const char* set_device;        // (int)
  const char* malloc;            // (void**, size_t)
  const char* free;              // (void*)
  const char* host_alloc;        // (void**, size_t, unsigned flags)
  const char* host_free;         // (void*)
  const char* memcpy_async;      // (void*, const void*, size_t, int kind, stream)
  const char* memset_async;      // (void*, int, size_t, stream)
  const char* stream_create_with_flags;  // (stream*, unsigned)
  const char* stream_destroy;            // (stream)
  const char* stream_synchronize;        // (stream)
  const char* stream_wait_event;         // (stream, event, unsigned)
  const char* event_create_with_flags;   // (event*, unsigned)
  const char* event_destroy;             // (event)
  const char* event_record;              // (event, stream)
  const char* event_query;               // (event)
  const char* event_synchronize;         // (event)
  const char* launch_host_func;          // (stream, void (*)(void*), void*)
  const char* get_last_error;            // (void)
  const char* get_error_string;          // const char* (int)
};

struct CclSymbols {
  const char* get_version;           // (int*)
  const char* get_error_string;      // const char* (int)
  const char* get_unique_id;         // (UniqueId*)
  const char* comm_init_rank;        // (comm*, int nranks, UniqueId by value, int rank)
  const char* comm_destroy;          // (comm)
  const char* comm_abort;            // (comm)
  const char* comm_get_async_error;  // (comm, int*)
  const char* all_reduce;            // (s, r, count, dtype, op, comm, stream)
  const char* broadcast;             // (s, r, count, dtype, root, comm, stream)
  const char* all_gather;            // (s, r, sendcount, dtype, comm, stream)
  const char* reduce_scatter;        // (s, r, recvcount, dtype, op, comm, stream)
  const char* send;                  // (s, count, dtype, peer, comm, stream)
  const char* recv;                  // (r, count, dtype, peer, comm, stream)
  const char* group_start;           // (void)
  const char* group_end;             // (void)
  const char* red_op_create_pre_mul_sum;  // (int* op, void* scalar, dtype, residence, comm)
  const char* red_op_destroy;             // (int op, comm)
  // Optional (nullptr: the vendor has none; the core composes them).
  const char* all_gather_v;  // (s, sendcount, r, const size_t* counts, const size_t* displs, dtype, comm, stream)
  const char* alltoall_v;    // (s, sc*, sd*, stype, r, rc*, rd*, rtype, comm, stream)
};

// A library to dlopen: the variable that overrides the path, then the
// default names tried in order (the dynamic linker's search applies).
struct LibrarySpec {
  const char* env_var;
  const char* defaults[6];  // nullptr-terminated
  const char* what;         // "the TOPS runtime", for messages
};

struct VendorSpec {
  const char* plugin_name;   // HOROVOD_ACCEL_PLUGINS name, e.g. "gcu"
  const char* version;       // the plugin's version
  const char* device_type;   // the framework's device type, e.g. "gcu", "cuda"
  const char* runtime_name;  // "TOPS", for messages
  const char* ccl_name;      // "ECCL", for messages
  LibrarySpec runtime_lib;
  LibrarySpec ccl_lib;
  RuntimeSymbols rt;
  CclSymbols ccl;
  // The C function `void* f(SP_Stream)` that the vendor's TensorFlow
  // PluggableDevice plugin exports to map its streams to native ones (NOTE
  // [TensorFlow streams] in framework_streams.h); nullptr: none.
  const char* tf_stream_symbol;

  // Runtime values.
  int rt_not_ready;          // the "not ready" error of event queries
  int memcpy_h2d, memcpy_d2h, memcpy_d2d;
  unsigned stream_non_blocking;
  unsigned event_disable_timing;
  bool not_ready_is_sticky;  // a NotReady query leaves a last error to clear

  // Collective-library values. dtype[hvda_dtype] is the library's type, or
  // -1 when it has none (reductions of that type are unsupported; data
  // movement always runs on bytes).
  int ccl_in_progress;
  int ccl_remote_error;      // -1 when the library has no such result
  int dtype[11];
  int op_sum, op_prod, op_max, op_min, op_avg;  // -1: absent
  int scalar_host_immediate;                    // PreMulSum scalar residence
  // The unique id is a 128-byte struct passed by value (NCCL, ECCL, RCCL);
  // a vendor with another size needs its own UniqueId type in vendor_api.h.
};

// The values shared by the CUDA runtime family (CUDA, TOPS, HIP: copy kinds,
// stream/event flags, the not-ready error) and the NCCL numbering of
// dtypes and reduction ops (NCCL, ECCL, RCCL). A vendor spec starts from
// these and overrides what differs.
inline void SetCudaLikeValues(VendorSpec* s) {
  s->rt_not_ready = 600;
  s->memcpy_h2d = 1;
  s->memcpy_d2h = 2;
  s->memcpy_d2d = 3;
  s->stream_non_blocking = 1;
  s->event_disable_timing = 2;
  // By hvda_dtype: uint8, int8, int16 (none), int32, int64, float16,
  // bfloat16, float32, float64, bool (as uint8), uint16 (none).
  const int dtypes[11] = {1, 0, -1, 2, 4, 6, 9, 7, 8, 1, -1};
  for (int i = 0; i < 11; ++i) s->dtype[i] = dtypes[i];
  s->op_sum = 0;
  s->op_prod = 1;
  s->op_max = 2;
  s->op_min = 3;
  s->op_avg = 4;
  s->scalar_host_immediate = 1;
}

}  // namespace vendor
}  // namespace hvda
