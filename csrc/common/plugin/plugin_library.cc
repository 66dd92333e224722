#include "common/plugin/plugin_library.h"

#include <dlfcn.h>

#include <cctype>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace hvda {
namespace {

// The first field a reader needs from each table: the last required one of
// ABI v1.0. A table with a smaller struct_size predates v1.0 (not a plugin).
constexpr size_t kPluginMinSize = offsetof(hvda_plugin_v1, ccl) + sizeof(void*);
constexpr size_t kDeviceMinSize =
    offsetof(hvda_device_ops_v1, batched_copy) + sizeof(void*);
constexpr size_t kCclMinSize = offsetof(hvda_ccl_ops_v1, group_end) + sizeof(void*);

template <typename T>
void Require(const char* name, T* fn, std::vector<std::string>* missing) {
  if (fn == nullptr) missing->push_back(name);
}

std::vector<std::string> MissingFunctions(const hvda_plugin_v1& p) {
  std::vector<std::string> m;
  Require("probe", p.probe, &m);
  Require("init", p.init, &m);
  Require("finalize", p.finalize, &m);
  Require("last_error", p.last_error, &m);
  if (p.device == nullptr || p.device->struct_size < kDeviceMinSize) {
    m.push_back("device (table missing or smaller than ABI 1.0's)");
  } else {
    const hvda_device_ops_v1& d = *p.device;
    Require("device.device_count", d.device_count, &m);
    Require("device.set_device", d.set_device, &m);
    Require("device.mem_alloc", d.mem_alloc, &m);
    Require("device.mem_free", d.mem_free, &m);
    Require("device.host_alloc", d.host_alloc, &m);
    Require("device.host_free", d.host_free, &m);
    Require("device.memcpy_async", d.memcpy_async, &m);
    Require("device.memset_async", d.memset_async, &m);
    Require("device.stream_create", d.stream_create, &m);
    Require("device.stream_wrap", d.stream_wrap, &m);
    Require("device.stream_destroy", d.stream_destroy, &m);
    Require("device.stream_synchronize", d.stream_synchronize, &m);
    Require("device.stream_wait_event", d.stream_wait_event, &m);
    Require("device.event_create", d.event_create, &m);
    Require("device.event_destroy", d.event_destroy, &m);
    Require("device.event_record", d.event_record, &m);
    Require("device.event_query", d.event_query, &m);
    Require("device.event_synchronize", d.event_synchronize, &m);
    // ABI 1.1: host-accessible memory lets the core supply these two.
    const bool host_kernels =
        p.abi_minor >= 1 &&
        HVDA_HAS_FIELD(p.device, hvda_device_ops_v1, memory_host_accessible) &&
        d.memory_host_accessible != 0;
    if (!host_kernels) {
      Require("device.scale", d.scale, &m);
      Require("device.reduce_into", d.reduce_into, &m);
    }
    Require("device.batched_copy", d.batched_copy, &m);
  }
  if (p.ccl == nullptr || p.ccl->struct_size < kCclMinSize) {
    m.push_back("ccl (table missing or smaller than ABI 1.0's)");
  } else {
    const hvda_ccl_ops_v1& c = *p.ccl;
    Require("ccl.unique_id_size", c.unique_id_size, &m);
    Require("ccl.get_unique_id", c.get_unique_id, &m);
    Require("ccl.comm_init_rank", c.comm_init_rank, &m);
    Require("ccl.comm_destroy", c.comm_destroy, &m);
    Require("ccl.comm_abort", c.comm_abort, &m);
    Require("ccl.comm_get_async_error", c.comm_get_async_error, &m);
    Require("ccl.supports", c.supports, &m);
    Require("ccl.allreduce", c.allreduce, &m);
    Require("ccl.broadcast", c.broadcast, &m);
    Require("ccl.allgather", c.allgather, &m);
    Require("ccl.reduce_scatter", c.reduce_scatter, &m);
    Require("ccl.send", c.send, &m);
    Require("ccl.recv", c.recv, &m);
    Require("ccl.group_start", c.group_start, &m);
    Require("ccl.group_end", c.group_end, &m);
  }
  return m;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

}  // namespace

const char* PluginStatusName(hvda_status s) {
  switch (s) {
    case HVDA_OK: return "OK";
    case HVDA_NOT_READY: return "NOT_READY";
    case HVDA_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case HVDA_UNSUPPORTED: return "UNSUPPORTED";
    case HVDA_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
    case HVDA_DEVICE_ERROR: return "DEVICE_ERROR";
    case HVDA_REMOTE_ERROR: return "REMOTE_ERROR";
    case HVDA_TIMEOUT: return "TIMEOUT";
    case HVDA_UNAVAILABLE: return "UNAVAILABLE";
    case HVDA_INTERNAL: return "INTERNAL";
  }
  return "UNKNOWN_STATUS";
}

PluginLibrary::PluginLibrary(void* handle, std::string path, const hvda_plugin_v1* plugin)
    : handle_(handle), path_(std::move(path)), plugin_(plugin) {
  device_type_ = plugin->device_type != nullptr ? plugin->device_type : "";
  std::string var = "HOROVOD_";
  for (const char* c = plugin->name; c != nullptr && *c != '\0'; ++c)
    var += std::isalnum(static_cast<unsigned char>(*c)) ? static_cast<char>(std::toupper(*c)) : '_';
  var += "_DEVICE_TYPE";
  const char* over = std::getenv(var.c_str());
  if (over != nullptr && *over != '\0') device_type_ = over;
}

PluginLibrary::~PluginLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

Status PluginLibrary::Open(const std::string& path, std::unique_ptr<PluginLibrary>* out) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Status::Unavailable("device plugin '" + path + "' cannot be loaded: " +
                               (why ? why : "unknown dlopen error") +
                               ". Check the path in HOROVOD_ACCEL_PLUGINS, or install the plugin.");
  }
  auto entry = reinterpret_cast<hvda_plugin_entry_v1>(dlsym(handle, HVDA_PLUGIN_ENTRY_V1));
  if (entry == nullptr) {
    dlclose(handle);
    return Status::Unavailable("'" + path + "' is not a horovod_accel device plugin: it exports "
                               "no '" HVDA_PLUGIN_ENTRY_V1 "' symbol (plugin ABI 1).");
  }
  const hvda_plugin_v1* p = entry(HVDA_PLUGIN_ABI_MAJOR, HVDA_PLUGIN_ABI_MINOR);
  std::string problem;
  if (p == nullptr) {
    problem = "its entry point declined this core's plugin ABI " +
              std::to_string(HVDA_PLUGIN_ABI_MAJOR) + "." + std::to_string(HVDA_PLUGIN_ABI_MINOR);
  } else if (p->struct_size < kPluginMinSize) {
    problem = "its plugin table is " + std::to_string(p->struct_size) +
              " bytes, smaller than ABI 1.0's " + std::to_string(kPluginMinSize);
  } else if (p->abi_major != HVDA_PLUGIN_ABI_MAJOR) {
    problem = "it was built for plugin ABI " + std::to_string(p->abi_major) + "." +
              std::to_string(p->abi_minor) + ", this core speaks " +
              std::to_string(HVDA_PLUGIN_ABI_MAJOR) + "." + std::to_string(HVDA_PLUGIN_ABI_MINOR);
  } else if (p->name == nullptr || p->name[0] == '\0') {
    problem = "it has no name";
  } else {
    std::vector<std::string> missing = MissingFunctions(*p);
    if (!missing.empty()) problem = "required functions are missing: " + Join(missing);
  }
  if (!problem.empty()) {
    dlclose(handle);
    return Status::InvalidArgument("device plugin '" + path + "' is incompatible: " + problem +
                                   ". Rebuild it against this horovod_accel's plugin.h.");
  }
  out->reset(new PluginLibrary(handle, path, p));
  return Status::OK();
}

Status PluginLibrary::Probe(const hvda_host_api_v1* host) const {
  hvda_status s = plugin_->probe(host);
  if (s == HVDA_OK) return Status::OK();
  return Error(s, std::string("device plugin '") + plugin_->name + "' is not usable here");
}

Status PluginLibrary::Error(hvda_status code, const std::string& what) const {
  const char* msg = plugin_->last_error();
  std::string reason = what + " (" + PluginStatusName(code) + ")";
  if (msg != nullptr && msg[0] != '\0') reason += ": " + std::string(msg);
  switch (code) {
    case HVDA_INVALID_ARGUMENT: return Status::InvalidArgument(reason);
    case HVDA_UNAVAILABLE: return Status::Unavailable(reason);
    case HVDA_TIMEOUT: return Status::Timeout(reason);
    case HVDA_REMOTE_ERROR: return Status::Aborted(reason);
    default: return Status::Unknown(reason);
  }
}

}  // namespace hvda
