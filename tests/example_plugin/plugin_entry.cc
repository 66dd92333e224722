// The example plugin's one exported symbol, horovod_accel_plugin_v1, and the
// hvda_plugin_v1 table behind it: probe, init, finalize, last_error, and the
// device and collective tables the other files fill (tables.h).
//
// Built against either header: HVDA_PLUGIN_ABI_MINOR (1 for
// csrc/include, 0 for tests/cpp/plugins/abi_1_0) selects the 1.1 fields.
#include <memory>

#include "plugin_state.h"
#include "tables.h"

namespace example {

namespace {

hvda_status Probe(const hvda_host_api_v1* host) {
  // Cheap and side-effect free: read the settings, open nothing.
  Settings settings;
  if (ReadSettings(host, &settings) != HVDA_OK)
    return Fail(HVDA_UNAVAILABLE, std::string("example plugin: ") + LastError());
  if (settings.device_count == 0)
    return Fail(HVDA_UNAVAILABLE,
                "example plugin: no devices (HOROVOD_EXAMPLE_DEVICE_COUNT=0): unset it or set "
                "it to the number of devices");
  return HVDA_OK;
}

hvda_status Init(const hvda_host_api_v1* host) {
  if (State() != nullptr)
    return Fail(HVDA_INVALID_ARGUMENT, "example plugin: init called twice (call finalize first)");
  Settings settings;
  if (hvda_status s = ReadSettings(host, &settings))
    return Fail(s, std::string("example plugin: ") + LastError());
  return Guarded("init", [&] {
    SetState(std::make_unique<PluginState>(host, settings));
    State()->Log(HVDA_LOG_DEBUG, "example plugin: " + std::to_string(settings.device_count) +
                                     " devices; unique ids advertise " + settings.address_text);
    return HVDA_OK;
  });
}

// Never waits: leaked communicators are aborted, not joined (plugin_state.h).
hvda_status Finalize() {
  SetState(nullptr);
  return HVDA_OK;
}

const char* LastErrorMessage() { return LastError(); }

struct Tables {
  hvda_device_ops_v1 device{};
  hvda_ccl_ops_v1 ccl{};
  hvda_plugin_v1 plugin{};
};

// Filled once, on first use (a function-local static: thread-safe), and
// never freed: the core keeps pointers into them until it unloads us.
const Tables& GetTables() {
  static Tables tables;
  static const bool filled = [] {
    FillDeviceOps(&tables.device);
    tables.ccl.struct_size = sizeof(hvda_ccl_ops_v1);
    FillCommOps(&tables.ccl);
    FillCollectiveOps(&tables.ccl);
    hvda_plugin_v1& p = tables.plugin;
    p.struct_size = sizeof(hvda_plugin_v1);
    p.abi_major = HVDA_PLUGIN_ABI_MAJOR;
    p.abi_minor = HVDA_PLUGIN_ABI_MINOR;  // what this build was compiled against
    p.name = "example";                    // every variant: only the file name differs
    p.version = "1.0.0";
    p.device_type = "example";
    p.probe = Probe;
    p.init = Init;
    p.finalize = Finalize;
    p.last_error = LastErrorMessage;
    p.device = &tables.device;
    p.ccl = &tables.ccl;
    return true;
  }();
  (void)filled;
  return tables;
}

}  // namespace

}  // namespace example

// The only symbol the library exports (CMakeLists.txt hides the rest).
extern "C" HVDA_PLUGIN_EXPORT const hvda_plugin_v1* horovod_accel_plugin_v1(uint32_t host_major,
                                                                           uint32_t host_minor) {
  if (host_major != HVDA_PLUGIN_ABI_MAJOR) return nullptr;  // "incompatible", never abort
#if HVDA_PLUGIN_ABI_MINOR >= 1
  // This build needs a 1.1 core: it leaves scale/reduce_into to the core
  // (memory_host_accessible) and frees ids in unique_id_release, neither of
  // which a 1.0 core knows. For a 1.0 core, build the abi10 variant.
  if (host_minor < 1) return nullptr;
#else
  (void)host_minor;  // a 1.0 table serves every 1.x core (minors only append)
#endif
  return &example::GetTables().plugin;
}
