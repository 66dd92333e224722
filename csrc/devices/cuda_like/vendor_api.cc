#include "devices/cuda_like/vendor_api.h"

#include <dlfcn.h>

#include <cstdlib>

namespace hvda {
namespace vendor {
namespace {

const char* Env(GetEnvFn getenv, const void* ctx, const char* name) {
  return getenv != nullptr ? getenv(ctx, name) : std::getenv(name);
}

}  // namespace

void* OpenVendorLibrary(const LibrarySpec& lib, GetEnvFn getenv, const void* ctx,
                        std::string* path, std::string* error) {
  const char* override_path = Env(getenv, ctx, lib.env_var);
  if (override_path != nullptr && override_path[0] != '\0') {
    void* h = dlopen(override_path, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* why = dlerror();
      *error = std::string(lib.what) + " library '" + override_path + "' (from " + lib.env_var +
               ") cannot be loaded: " + (why ? why : "unknown error") + ". Point " + lib.env_var +
               " at the library file, or unset it to use the default search.";
      return nullptr;
    }
    *path = override_path;
    return h;
  }
  // NOTE [Share the framework's runtime]: a default the process has loaded
  // already (the framework's own CUDA runtime or NCCL, matched by soname)
  // wins over an earlier default that the linker would find on disk, so the
  // plugin and the framework share one copy instead of loading a second,
  // possibly of another version, beside it.
  for (const char* name : lib.defaults) {
    if (name == nullptr) break;
    if (void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
      *path = name;
      return h;
    }
  }
  std::string tried;
  for (const char* name : lib.defaults) {
    if (name == nullptr) break;
    void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (h != nullptr) {
      *path = name;
      return h;
    }
    tried += tried.empty() ? name : std::string(", ") + name;
  }
  *error = std::string(lib.what) + " library was not found (tried " + tried +
           " on the dynamic linker's path). Install it, add its directory to LD_LIBRARY_PATH, "
           "or set " + lib.env_var + " to its path.";
  return nullptr;
}

namespace {

// Resolves `name` into *fn. Missing required symbols fail the load; a
// missing optional one (or a null name) leaves *fn null.
template <typename Fn>
bool Resolve(void* handle, const char* name, Fn* fn, bool required, const std::string& path,
             std::string* error) {
  *fn = nullptr;
  if (name == nullptr) return !required;
  void* sym = dlsym(handle, name);
  if (sym == nullptr) {
    if (!required) return true;
    *error = "'" + path + "' has no symbol " + name + ": it is not a compatible library (too old, "
             "or another vendor's). Point the variable at a matching version.";
    return false;
  }
  *fn = reinterpret_cast<Fn>(sym);
  return true;
}

}  // namespace

std::unique_ptr<LoadedVendor> LoadedVendor::Load(const VendorSpec& spec, GetEnvFn getenv,
                                                 const void* ctx, std::string* error) {
  std::unique_ptr<LoadedVendor> v(new LoadedVendor());
  v->runtime_ = OpenVendorLibrary(spec.runtime_lib, getenv, ctx, &v->runtime_path_, error);
  if (v->runtime_ == nullptr) return nullptr;
  v->ccl_ = OpenVendorLibrary(spec.ccl_lib, getenv, ctx, &v->ccl_path_, error);
  if (v->ccl_ == nullptr) return nullptr;

  VendorApi& a = v->api_;
  const RuntimeSymbols& r = spec.rt;
  const CclSymbols& c = spec.ccl;
  void* rt = v->runtime_;
  void* cl = v->ccl_;
  const std::string& rp = v->runtime_path_;
  const std::string& cp = v->ccl_path_;
  bool ok = Resolve(rt, r.get_device_count, &a.get_device_count, true, rp, error) &&
            Resolve(rt, r.set_device, &a.set_device, true, rp, error) &&
            Resolve(rt, r.malloc, &a.malloc, true, rp, error) &&
            Resolve(rt, r.free, &a.free, true, rp, error) &&
            Resolve(rt, r.host_alloc, &a.host_alloc, true, rp, error) &&
            Resolve(rt, r.host_free, &a.host_free, true, rp, error) &&
            Resolve(rt, r.memcpy_async, &a.memcpy_async, true, rp, error) &&
            Resolve(rt, r.memset_async, &a.memset_async, true, rp, error) &&
            Resolve(rt, r.stream_create_with_flags, &a.stream_create_with_flags, true, rp, error) &&
            Resolve(rt, r.stream_destroy, &a.stream_destroy, true, rp, error) &&
            Resolve(rt, r.stream_synchronize, &a.stream_synchronize, true, rp, error) &&
            Resolve(rt, r.stream_wait_event, &a.stream_wait_event, true, rp, error) &&
            Resolve(rt, r.event_create_with_flags, &a.event_create_with_flags, true, rp, error) &&
            Resolve(rt, r.event_destroy, &a.event_destroy, true, rp, error) &&
            Resolve(rt, r.event_record, &a.event_record, true, rp, error) &&
            Resolve(rt, r.event_query, &a.event_query, true, rp, error) &&
            Resolve(rt, r.event_synchronize, &a.event_synchronize, true, rp, error) &&
            Resolve(rt, r.launch_host_func, &a.launch_host_func, true, rp, error) &&
            Resolve(rt, r.get_last_error, &a.get_last_error, true, rp, error) &&
            Resolve(rt, r.get_error_string, &a.rt_error_string, true, rp, error) &&
            Resolve(cl, c.get_version, &a.ccl_get_version, true, cp, error) &&
            Resolve(cl, c.get_error_string, &a.ccl_error_string, true, cp, error) &&
            Resolve(cl, c.get_unique_id, &a.get_unique_id, true, cp, error) &&
            Resolve(cl, c.comm_init_rank, &a.comm_init_rank, true, cp, error) &&
            Resolve(cl, c.comm_destroy, &a.comm_destroy, true, cp, error) &&
            Resolve(cl, c.comm_abort, &a.comm_abort, true, cp, error) &&
            Resolve(cl, c.comm_get_async_error, &a.comm_get_async_error, true, cp, error) &&
            Resolve(cl, c.all_reduce, &a.all_reduce, true, cp, error) &&
            Resolve(cl, c.broadcast, &a.broadcast, true, cp, error) &&
            Resolve(cl, c.all_gather, &a.all_gather, true, cp, error) &&
            Resolve(cl, c.reduce_scatter, &a.reduce_scatter, true, cp, error) &&
            Resolve(cl, c.send, &a.send, true, cp, error) &&
            Resolve(cl, c.recv, &a.recv, true, cp, error) &&
            Resolve(cl, c.group_start, &a.group_start, true, cp, error) &&
            Resolve(cl, c.group_end, &a.group_end, true, cp, error) &&
            Resolve(cl, c.red_op_create_pre_mul_sum, &a.red_op_create_pre_mul_sum, false, cp,
                    error) &&
            Resolve(cl, c.red_op_destroy, &a.red_op_destroy, false, cp, error) &&
            // Named in the spec: the plugin's table offers them, so they must exist.
            Resolve(cl, c.all_gather_v, &a.all_gather_v, c.all_gather_v != nullptr, cp, error) &&
            Resolve(cl, c.alltoall_v, &a.alltoall_v, c.alltoall_v != nullptr, cp, error);
  if (!ok) return nullptr;
  if ((a.red_op_create_pre_mul_sum == nullptr) != (a.red_op_destroy == nullptr)) {
    a.red_op_create_pre_mul_sum = nullptr;  // one without the other is unusable
    a.red_op_destroy = nullptr;
  }
  return v;
}

LoadedVendor::~LoadedVendor() {
  if (ccl_ != nullptr) dlclose(ccl_);
  if (runtime_ != nullptr) dlclose(runtime_);
}

}  // namespace vendor
}  // namespace hvda
