// Finding and probing device plugins (docs/design/plugins.md).
//
// A plugin is named in HOROVOD_ACCEL_PLUGINS (comma-separated names or
// paths) or by a Python package through the entry-point group
// `horovod_accel.plugins` (the Python layer resolves those to paths). A name
// `x` means the library libhorovod_accel_x.so: first in each search
// directory (the package's own plugin folder), else wherever the dynamic
// linker finds it (LD_LIBRARY_PATH, ...).
#pragma once

#include <string>
#include <vector>

#include "common/util/logging.h"
#include "horovod_accel/plugin.h"

namespace hvda {

// The core's side of hvda_host_api_v1: routes plugin log lines to a Logger
// and answers getenv from the process environment (which the core's config
// registry is read from, so both agree). `api` is the first member, so a
// callback can get back to its HostApi.
// Lifetime: outlives every plugin call that was given &api.
struct HostApi {
  explicit HostApi(const Logger* log);
  hvda_host_api_v1 api;
  const Logger* log;  // borrowed; may be null (warnings and errors go to stderr)
};

// "acme,/opt/x/libfoo.so" -> the library paths to dlopen, in order, without
// duplicates. A spec with a '/' or ending in ".so" is a path; a name is
// looked up as libhorovod_accel_<name>.so in search_dirs, else left bare for
// the dynamic linker.
std::vector<std::string> ResolvePluginSpecs(const std::string& specs,
                                            const std::vector<std::string>& search_dirs);

// What `horovodrun --check-build` shows of one plugin.
struct PluginReport {
  std::string path;          // as given to dlopen
  std::string name;          // from the plugin ("" if it did not load)
  std::string version;
  std::string device_type;
  std::string abi;           // "1.0"
  bool available = false;    // loaded, compatible, and probe() said OK
  std::string why;           // when not available: what is wrong and what to do
};

// Loads, validates and probes the plugin at `path`, then unloads it.
PluginReport ProbePlugin(const std::string& path, const HostApi& host);

}  // namespace hvda
