// The vendor's runtime and collective functions, resolved from the libraries
// named by a VendorSpec. The signatures are those of the CUDA runtime / NCCL
// family with every enum as int and every handle as an opaque pointer, which
// is ABI-identical to the vendors' own declarations; no vendor header is
// needed to build.
//
// Lifetime: a VendorApi owns the dlopen handles; its function pointers are
// valid until it is destroyed (the plugin's finalize).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "devices/cuda_like/vendor_spec.h"

namespace hvda {
namespace vendor {

using NativeStream = void*;
using NativeEvent = void*;
using NativeComm = void*;
struct UniqueId {
  char internal[128];
};
using HostFn = void (*)(void*);

struct VendorApi {
  // Runtime.
  int (*get_device_count)(int*);
  int (*set_device)(int);
  int (*malloc)(void**, size_t);
  int (*free)(void*);
  int (*host_alloc)(void**, size_t, unsigned);
  int (*host_free)(void*);
  int (*memcpy_async)(void*, const void*, size_t, int, NativeStream);
  int (*memset_async)(void*, int, size_t, NativeStream);
  int (*stream_create_with_flags)(NativeStream*, unsigned);
  int (*stream_destroy)(NativeStream);
  int (*stream_synchronize)(NativeStream);
  int (*stream_wait_event)(NativeStream, NativeEvent, unsigned);
  int (*event_create_with_flags)(NativeEvent*, unsigned);
  int (*event_destroy)(NativeEvent);
  int (*event_record)(NativeEvent, NativeStream);
  int (*event_query)(NativeEvent);
  int (*event_synchronize)(NativeEvent);
  int (*launch_host_func)(NativeStream, HostFn, void*);
  int (*get_last_error)();
  const char* (*rt_error_string)(int);

  // Collectives.
  int (*ccl_get_version)(int*);
  const char* (*ccl_error_string)(int);
  int (*get_unique_id)(UniqueId*);
  int (*comm_init_rank)(NativeComm*, int, UniqueId, int);
  int (*comm_destroy)(NativeComm);
  int (*comm_abort)(NativeComm);
  int (*comm_get_async_error)(NativeComm, int*);
  int (*all_reduce)(const void*, void*, size_t, int, int, NativeComm, NativeStream);
  int (*broadcast)(const void*, void*, size_t, int, int, NativeComm, NativeStream);
  int (*all_gather)(const void*, void*, size_t, int, NativeComm, NativeStream);
  int (*reduce_scatter)(const void*, void*, size_t, int, int, NativeComm, NativeStream);
  int (*send)(const void*, size_t, int, int, NativeComm, NativeStream);
  int (*recv)(void*, size_t, int, int, NativeComm, NativeStream);
  int (*group_start)();
  int (*group_end)();
  int (*red_op_create_pre_mul_sum)(int*, void*, int, int, NativeComm);
  int (*red_op_destroy)(int, NativeComm);
  // Optional: null when the vendor has none.
  int (*all_gather_v)(const void*, size_t, void*, const size_t*, const size_t*, int, NativeComm,
                      NativeStream);
  int (*alltoall_v)(const void*, const size_t*, const size_t*, int, void*, const size_t*,
                    const size_t*, int, NativeComm, NativeStream);
};

// Reads an environment variable the way the core sees it (the host API's
// getenv); may be null (then ::getenv).
using GetEnvFn = const char* (*)(const void* ctx, const char* name);

// dlopens the library `lib` names and returns its handle (the caller
// dlcloses it), setting *path to the name or path that opened it: the
// override variable's path if set (read through `getenv`, or the process
// environment when null); else the first default the process has loaded
// already (NOTE [Share the framework's runtime] in vendor_api.cc); else the
// first default the dynamic linker finds. On failure returns nullptr and
// sets *error to a message that says what to do.
void* OpenVendorLibrary(const LibrarySpec& lib, GetEnvFn getenv, const void* ctx,
                        std::string* path, std::string* error);

// The loaded libraries.
class LoadedVendor {
 public:
  // Opens the runtime and the collective library and resolves every
  // required symbol. On failure returns null and sets *error to a message
  // naming the library, the variable that points to it and what to do.
  static std::unique_ptr<LoadedVendor> Load(const VendorSpec& spec, GetEnvFn getenv,
                                            const void* ctx, std::string* error);
  ~LoadedVendor();
  LoadedVendor(const LoadedVendor&) = delete;
  LoadedVendor& operator=(const LoadedVendor&) = delete;

  const VendorApi& api() const { return api_; }
  const std::string& runtime_path() const { return runtime_path_; }
  const std::string& ccl_path() const { return ccl_path_; }

 private:
  LoadedVendor() = default;
  VendorApi api_{};
  void* runtime_ = nullptr;  // dlopen handles, closed in the destructor
  void* ccl_ = nullptr;
  std::string runtime_path_, ccl_path_;
};

}  // namespace vendor
}  // namespace hvda
