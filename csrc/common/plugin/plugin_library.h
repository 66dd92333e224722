// PluginLibrary: one device plugin shared library (csrc/include/horovod_accel/
// plugin.h), opened with dlopen and validated: entry symbol, then its ABI
// version's adapter (plugin_abi.h: ABI major, struct sizes, every required
// function) and the device type it serves. Loading a plugin never loads a
// vendor library; the plugin does that in init(). How a plugin is opened
// (symbol isolation) and what a vendor's link line must do:
// docs/design/plugin_loading.md.
//
// Lifetime: the library stays mapped while the PluginLibrary lives; the
// plugin's tables (plugin(), device(), ccl()) and the core's table over
// them (ops()) are valid until then.
// Thread-safety: the accessors are const and thread-safe; Probe/Init follow
// the plugin's own rules (plugin.h). Open only reads the environment.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "common/plugin/plugin_activity.h"
#include "common/plugin/plugin_ops.h"
#include "common/util/status.h"
#include "horovod_accel/plugin.h"

namespace hvda {

// How the dynamic linker resolves the symbols that a plugin, and every
// library that its dlopen newly loads (its DT_NEEDED closure), reference.
enum class PluginIsolation {
  // RTLD_DEEPBIND: the plugin's own dependency tree is searched before the
  // process's global scope, so a framework library loaded RTLD_GLOBAL that
  // exports the same symbols (libtorch_cpu.so carries Gloo) cannot take the
  // plugin's calls. Caveats: docs/design/plugin_loading.md.
  kDeepBind,
  // RTLD_LOCAL only: the global scope is searched first (the framework's
  // copies win). For plugins that rely on interposition (a preloaded
  // allocator freeing what libc allocated, sanitizers).
  kNone,
};

const char* PluginIsolationName(PluginIsolation i);

// The isolation that Open(path, out) uses: kDeepBind, unless
//  - HOROVOD_ACCEL_PLUGIN_DEEPBIND is 0 / false / off / no (case-insensitive),
//  - a sanitizer runtime is in the process (ASan/TSan/MSan/HWASan abort on
//    an RTLD_DEEPBIND dlopen), or
//  - the C library has no RTLD_DEEPBIND (not glibc).
// `why`, when not null, receives one sentence saying which rule decided.
// Reads the environment and the process's loaded symbols; no side effects.
PluginIsolation DefaultPluginIsolation(std::string* why = nullptr);

class PluginLibrary {
 public:
  ~PluginLibrary();
  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;

  // Opens the library at `path` (a file path, or a bare file name that the
  // dynamic linker searches for) with DefaultPluginIsolation(). Errors (each
  // message names the path and what to do; nothing stays loaded):
  //  - Unavailable, "not found": no readable file at `path` (or, for a bare
  //    name, the dynamic linker found none);
  //  - Unavailable, "found but cannot be loaded": the file is there but
  //    dlopen failed - a library it needs is missing or broken; the message
  //    quotes dlerror, which names that library;
  //  - Unavailable: no entry symbol (not a plugin);
  //  - InvalidArgument: not a compatible plugin (its entry declined this
  //    core, or AdaptPlugin refused it: wrong ABI major, struct too small, a
  //    required function missing), or its device type - its own or
  //    HOROVOD_<NAME>_DEVICE_TYPE's - is `cpu`, the host device that the core
  //    serves itself.
  static Status Open(const std::string& path, std::unique_ptr<PluginLibrary>* out);
  // The same with an explicit isolation (tests; a caller that knows better).
  static Status Open(const std::string& path, PluginIsolation isolation,
                     std::unique_ptr<PluginLibrary>* out);

  const std::string& path() const { return path_; }
  PluginIsolation isolation() const { return isolation_; }
  // The core's table of the plugin's calls, normalised from whatever 1.x
  // version it was built against (NOTE [One table per plugin] in
  // plugin_ops.h): what the core calls.
  const PluginOps& ops() const { return ops_; }
  // The plugin's own tables, as it exported them: for its header fields
  // (name, version, device_type) and for tests that inspect the raw ABI.
  // Fields added after 1.0 may lie past a table's struct_size: read the
  // plugin's calls through ops().
  const hvda_plugin_v1& plugin() const { return *plugin_; }
  const hvda_device_ops_v1& device() const { return *plugin_->device; }
  const hvda_ccl_ops_v1& ccl() const { return *plugin_->ccl; }

  // The framework device type whose tensors this plugin serves: the
  // plugin's own device_type, unless HOROVOD_<NAME>_DEVICE_TYPE (NAME = the
  // plugin's name in upper case, e.g. HOROVOD_GCU_DEVICE_TYPE) says
  // otherwise - for a framework extension that registers the device under
  // another name. Read once, at Open; never `cpu` (Open refuses that).
  const std::string& device_type() const { return device_type_; }

  // plugin().probe(host): OK, or Unavailable with the plugin's message.
  Status Probe(const hvda_host_api_v1* host) const;

  // A failed call's Status: `what` plus the plugin's last_error() message.
  Status Error(hvda_status code, const std::string& what) const;

  // The collectives the core has run through this library (PluginBackend
  // counts them; the Runtime reports them, e.g. to the conformance suite).
  // Lives as long as the library: counts span init() generations.
  PluginActivity& activity() const { return activity_; }

  // Keeps the library mapped when this object dies (no dlclose): called
  // when the core abandons a plugin object whose work may still run - a
  // stuck communication stream (NOTE [Bounded teardown]) - so that the
  // plugin's threads never run unmapped code. Thread-safe.
  void KeepLoaded() const { keep_loaded_.store(true); }
  bool kept_loaded() const { return keep_loaded_.load(); }

 private:
  PluginLibrary(void* handle, std::string path, PluginIsolation isolation,
                const hvda_plugin_v1* plugin, PluginOps ops, std::string device_type);

  void* handle_;  // from dlopen; closed by the destructor
  std::string path_;
  PluginIsolation isolation_;
  const hvda_plugin_v1* plugin_;  // owned by the library
  PluginOps ops_;                 // points into the library
  std::string device_type_;
  mutable PluginActivity activity_;  // counters only; see activity()
  mutable std::atomic<bool> keep_loaded_{false};
};

// "HOROVOD_<NAME>_DEVICE_TYPE" for a plugin named `plugin_name` (upper case;
// characters other than letters and digits become '_').
std::string DeviceTypeVariable(const char* plugin_name);

const char* PluginStatusName(hvda_status s);

}  // namespace hvda
