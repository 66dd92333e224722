// PluginLibrary: one device plugin shared library (csrc/include/horovod_accel/
// plugin.h), opened with dlopen and validated: entry symbol, ABI major
// version, struct sizes and every required function. Loading a plugin never
// loads a vendor library; the plugin does that in init().
//
// Lifetime: the library stays mapped while the PluginLibrary lives; the
// plugin's tables (plugin(), device(), ccl()) are valid until then.
// Thread-safety: the accessors are const and thread-safe; Probe/Init follow
// the plugin's own rules (plugin.h).
#pragma once

#include <memory>
#include <string>

#include "common/util/status.h"
#include "horovod_accel/plugin.h"

namespace hvda {

class PluginLibrary {
 public:
  ~PluginLibrary();
  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;

  // Opens the library at `path` (a file path, or a bare file name that the
  // dynamic linker searches for). Unavailable when the file cannot be loaded
  // or has no entry symbol; InvalidArgument when it is not a compatible
  // plugin (wrong ABI major, struct too small, a required function missing).
  // The message names the path and what to do. Nothing stays loaded on failure.
  static Status Open(const std::string& path, std::unique_ptr<PluginLibrary>* out);

  const std::string& path() const { return path_; }
  const hvda_plugin_v1& plugin() const { return *plugin_; }
  const hvda_device_ops_v1& device() const { return *plugin_->device; }
  const hvda_ccl_ops_v1& ccl() const { return *plugin_->ccl; }

  // The framework device type whose tensors this plugin serves: the
  // plugin's own device_type, unless HOROVOD_<NAME>_DEVICE_TYPE (NAME = the
  // plugin's name in upper case, e.g. HOROVOD_GCU_DEVICE_TYPE) says
  // otherwise - for a framework extension that registers the device under
  // another name. Read once, at Open.
  const std::string& device_type() const { return device_type_; }

  // plugin().probe(host): OK, or Unavailable with the plugin's message.
  Status Probe(const hvda_host_api_v1* host) const;

  // A failed call's Status: `what` plus the plugin's last_error() message.
  Status Error(hvda_status code, const std::string& what) const;

 private:
  PluginLibrary(void* handle, std::string path, const hvda_plugin_v1* plugin);

  void* handle_;  // from dlopen; closed by the destructor
  std::string path_;
  const hvda_plugin_v1* plugin_;  // owned by the library
  std::string device_type_;
};

const char* PluginStatusName(hvda_status s);

}  // namespace hvda
