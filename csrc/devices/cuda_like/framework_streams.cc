// stream_from_framework for CUDA-like vendors (NOTE [TensorFlow streams] in
// framework_streams.h).
#include "devices/cuda_like/framework_streams.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <string>
#include <vector>

#include "devices/cuda_like/plugin_instance.h"

namespace hvda {
namespace vendor {
namespace {

using TfStreamFn = void* (*)(void*);

int CollectName(struct dl_phdr_info* info, size_t, void* out) {
  if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0')
    static_cast<std::vector<std::string>*>(out)->push_back(info->dlpi_name);
  return 0;
}

// `symbol` in any library loaded in this process, or null. Looks in the
// global scope first, then in each loaded object's own scope (RTLD_NOLOAD
// never loads anything; the reference it takes is dropped at once, and the
// object stays loaded by whoever loaded it).
void* FindLoadedSymbol(const char* symbol) {
  if (void* global = dlsym(RTLD_DEFAULT, symbol)) return global;
  std::vector<std::string> names;
  dl_iterate_phdr(&CollectName, &names);
  for (const std::string& name : names) {
    void* handle = dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    void* found = dlsym(handle, symbol);
    dlclose(handle);
    if (found != nullptr) return found;
  }
  return nullptr;
}

}  // namespace

hvda_status StreamFromFramework(int device, const char* framework, void* framework_stream,
                                void** native) {
  HVDA_REQUIRE(p);
  (void)device;  // an SP_Stream belongs to one device already
  const VendorSpec& spec = p->spec();
  if (framework == nullptr || std::strcmp(framework, "tensorflow") != 0)
    return Fail(HVDA_UNAVAILABLE, std::string(spec.plugin_name) + " plugin: no mapping for '" +
                                      (framework ? framework : "(null)") +
                                      "' streams (it maps \"tensorflow\" SP_Streams only)");
  if (spec.tf_stream_symbol == nullptr)
    return Fail(HVDA_UNAVAILABLE, std::string(spec.plugin_name) +
                                      " plugin: TensorFlow PluggableDevice streams are not "
                                      "supported for this vendor");
  void* fn = p->TfStreamMapper();
  if (fn == nullptr) {
    fn = FindLoadedSymbol(spec.tf_stream_symbol);
    if (fn == nullptr)
      return Fail(HVDA_UNAVAILABLE,
                  std::string(spec.plugin_name) + " plugin: no loaded library exports " +
                      spec.tf_stream_symbol + "(SP_Stream), which maps TensorFlow's " +
                      spec.device_type + " stream to the " + spec.runtime_name +
                      " stream. Load the vendor's TensorFlow plugin for this device (one that "
                      "exports it; docs/vendor_guide.md) before running Horovod ops on it");
    p->SetTfStreamMapper(fn);
  }
  *native = reinterpret_cast<TfStreamFn>(fn)(framework_stream);
  return HVDA_OK;
}

}  // namespace vendor
}  // namespace hvda
