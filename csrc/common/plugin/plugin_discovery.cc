#include "common/plugin/plugin_discovery.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>

#include "common/plugin/plugin_abi.h"
#include "common/plugin/plugin_library.h"

namespace hvda {
namespace {

const HostApi& Self(const hvda_host_api_v1* api) {
  // `api` is the first member of a HostApi (standard layout).
  return *reinterpret_cast<const HostApi*>(api);
}

void HostLog(const hvda_host_api_v1* self, hvda_log_level level, const char* message) {
  const HostApi& host = Self(self);
  LogLevel l = level == HVDA_LOG_ERROR     ? LogLevel::kError
               : level == HVDA_LOG_WARNING ? LogLevel::kWarning
               : level == HVDA_LOG_INFO    ? LogLevel::kInfo
                                           : LogLevel::kDebug;
  const std::string text = std::string("[plugin] ") + (message ? message : "");
  if (host.log != nullptr)
    host.log->Log(l, text);
  else if (l >= LogLevel::kWarning)
    std::cerr << "horovod_accel: " << text << std::endl;
}

const char* HostGetenv(const hvda_host_api_v1*, const char* name) {
  return name == nullptr ? nullptr : std::getenv(name);
}

bool IsFile(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string Trim(std::string s) {
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), [](char c) { return !isspace(c); }));
  s.erase(std::find_if(s.rbegin(), s.rend(), [](char c) { return !isspace(c); }).base(), s.end());
  return s;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

HostApi::HostApi(const Logger* l) : api{}, log(l) {
  api.struct_size = sizeof(hvda_host_api_v1);
  api.host_major = HVDA_PLUGIN_ABI_MAJOR;
  api.host_minor = HVDA_PLUGIN_ABI_MINOR;
  api.log = &HostLog;
  api.getenv = &HostGetenv;
}

std::vector<std::string> ResolvePluginSpecs(const std::string& specs,
                                            const std::vector<std::string>& search_dirs) {
  std::vector<std::string> out;
  std::stringstream ss(specs);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item = Trim(item);
    if (item.empty()) continue;
    std::string path = item;
    if (item.find('/') == std::string::npos && !EndsWith(item, ".so")) {
      const std::string file = "libhorovod_accel_" + item + ".so";
      path = file;  // the dynamic linker's search, unless a search dir has it
      for (const auto& dir : search_dirs)
        if (IsFile(dir + "/" + file)) {
          path = dir + "/" + file;
          break;
        }
    }
    if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(path);
  }
  return out;
}

PluginReport ProbePlugin(const std::string& path, const HostApi& host) {
  PluginReport r;
  r.path = path;
  std::unique_ptr<PluginLibrary> lib;
  Status st = PluginLibrary::Open(path, &lib);
  if (!st.ok()) {
    r.why = st.reason();
    return r;
  }
  const hvda_plugin_v1& p = lib->plugin();
  r.name = p.name;
  r.version = p.version ? p.version : "";
  r.device_type = lib->device_type();
  r.abi = PluginAbiVersion(p);
  st = lib->Probe(&host.api);
  r.available = st.ok();
  if (!st.ok()) r.why = st.reason();
  return r;
}

}  // namespace hvda
