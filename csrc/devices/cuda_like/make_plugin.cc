#include "devices/cuda_like/make_plugin.h"

#include <exception>
#include <string>

#include "devices/cuda_like/ccl_ops.h"
#include "devices/cuda_like/device_ops.h"
#include "devices/cuda_like/plugin_instance.h"

namespace hvda {
namespace vendor {
namespace {

// The spec of this library, fixed by the entry symbol's first call.
const VendorSpec*& Spec() {
  static const VendorSpec* spec = nullptr;
  return spec;
}

GetEnvFn HostGetenv(const hvda_host_api_v1* host) {
  if (host == nullptr || host->getenv == nullptr) return nullptr;
  return [](const void* ctx, const char* name) {
    auto* h = static_cast<const hvda_host_api_v1*>(ctx);
    return h->getenv(h, name);
  };
}

hvda_status Probe(const hvda_host_api_v1* host) {
  const VendorSpec& spec = *Spec();
  try {
    std::string error;
    auto vendor = LoadedVendor::Load(spec, HostGetenv(host), host, &error);
    if (!vendor) return Fail(HVDA_UNAVAILABLE, error);
    int count = 0;
    const int r = vendor->api().get_device_count(&count);
    if (r != 0 || count <= 0)
      return Fail(HVDA_UNAVAILABLE,
                  std::string("no ") + spec.runtime_name + " device is visible (" +
                      spec.rt.get_device_count + " returned " + std::to_string(r) + ", " +
                      std::to_string(count) + " devices; runtime '" + vendor->runtime_path() +
                      "'). Check the driver and the *_VISIBLE_DEVICES variables.");
    return HVDA_OK;
  } catch (const std::exception& e) {
    return Fail(HVDA_INTERNAL, e.what());
  }
}

hvda_status Init(const hvda_host_api_v1* host) {
  const VendorSpec& spec = *Spec();
  try {
    if (Instance() != nullptr) return HVDA_OK;
    std::string error;
    auto vendor = LoadedVendor::Load(spec, HostGetenv(host), host, &error);
    if (!vendor) return Fail(HVDA_UNAVAILABLE, error);
    std::unique_ptr<PluginInstance> p(new PluginInstance(&spec, host, std::move(vendor)));
    int version = 0;
    p->api().ccl_get_version(&version);
    p->Log(HVDA_LOG_DEBUG, std::string(spec.plugin_name) + " plugin: " + spec.ccl_name +
                               " version " + std::to_string(version));
    SetInstance(std::move(p));
    return HVDA_OK;
  } catch (const std::exception& e) {
    return Fail(HVDA_INTERNAL, e.what());
  }
}

hvda_status Finalize() {
  SetInstance(nullptr);
  return HVDA_OK;
}

}  // namespace

const hvda_plugin_v1* MakeVendorPlugin(const VendorSpec& spec, uint32_t host_major,
                                       uint32_t host_minor) {
  (void)host_minor;  // fields are append-only: any 1.x host reads what it knows
  if (host_major != HVDA_PLUGIN_ABI_MAJOR) return nullptr;
  Spec() = &spec;
  static const hvda_plugin_v1 plugin = [&spec] {
    hvda_plugin_v1 p{};
    p.struct_size = sizeof(p);
    p.abi_major = HVDA_PLUGIN_ABI_MAJOR;
    p.abi_minor = HVDA_PLUGIN_ABI_MINOR;
    p.name = spec.plugin_name;
    p.version = spec.version;
    p.device_type = spec.device_type;
    p.probe = Probe;
    p.init = Init;
    p.finalize = Finalize;
    p.last_error = LastError;
    p.device = DeviceOps();
    p.ccl = CclOps(spec);
    return p;
  }();
  return &plugin;
}

}  // namespace vendor
}  // namespace hvda
