#include "common/plugin/plugin_library.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace hvda {
namespace {

// ----------------------------------------------------------- isolation
//
// Why RTLD_DEEPBIND by default (docs/design/plugin_loading.md): a vendor
// plugin typically links its collective library as a shared dependency
// (libgloo.so, a vendor CCL). Under plain RTLD_LOCAL the dynamic linker still
// resolves the plugin's undefined symbols in the *global* scope first, and a
// framework loaded RTLD_GLOBAL (torch: libtorch_cpu.so exports ~500 Gloo
// symbols) then takes the plugin's calls into another build of the same
// library - the crash of issue 30. -Bsymbolic, hidden visibility and version
// scripts cannot help there: they bind a library's references to its *own*
// definitions, not to a dependency's. DEEPBIND puts the plugin's own
// dependency tree first for the plugin and for every library its dlopen
// newly loads; libraries already loaded (libc, libstdc++, a vendor runtime
// the framework opened) are the same objects either way. Its price - a
// symbol the process interposes globally (LD_PRELOADed malloc, sanitizer
// interceptors) is not seen by the plugin's tree - is why it can be turned
// off, and is turned off where it is known to fail (sanitizers).

bool IsOffWord(std::string v) {
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v == "0" || v == "false" || v == "off" || v == "no";
}

// A sanitizer runtime in the process: its dlopen interceptor refuses
// RTLD_DEEPBIND (it would bypass the interceptors), aborting the process.
const char* SanitizerRuntime() {
  for (const char* sym : {"__asan_init", "__tsan_init", "__msan_init", "__hwasan_init"})
    if (dlsym(RTLD_DEFAULT, sym) != nullptr) return sym;
  return nullptr;
}

int DlopenFlags(PluginIsolation isolation) {
  int flags = RTLD_NOW | RTLD_LOCAL;
#ifdef RTLD_DEEPBIND
  if (isolation == PluginIsolation::kDeepBind) flags |= RTLD_DEEPBIND;
#endif
  return flags;
}

// ----------------------------------------------------------- load errors

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// Whether a failed dlopen of `path` failed because the plugin file itself is
// not there (or not readable), as opposed to a file that exists but does not
// load (a library it needs is missing or broken, or the file is not a
// library for this machine).
bool PluginFileMissing(const std::string& path, const std::string& dl_error) {
  if (path.find('/') != std::string::npos) {
    struct stat st;
    return stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || access(path.c_str(), R_OK) != 0;
  }
  // A bare name is the dynamic linker's to find; glibc's "cannot open"
  // message starts with the name it could not open - ours, or a dependency's.
  return StartsWith(dl_error, path + ": cannot open shared object file");
}

Status LoadError(const std::string& path, const std::string& dl_error) {
  if (PluginFileMissing(path, dl_error)) {
    const std::string where =
        path.find('/') != std::string::npos
            ? "there is no readable file at that path"
            : "the dynamic linker found no such file (search dirs, LD_LIBRARY_PATH, "
              "system library dirs)";
    return Status::Unavailable("device plugin '" + path + "' not found: " + where + " (" +
                               dl_error + "). Check the name or path in HOROVOD_ACCEL_PLUGINS "
                               "(or the plugin package's entry point), or install the plugin.");
  }
  const std::string found =
      "device plugin '" + path + "' was found but cannot be loaded: " + dl_error;
  // The plugin file itself is broken (glibc names it first: "invalid ELF
  // header", "wrong ELF class", "file too short"); an undefined symbol of
  // the plugin's means a dependency of the wrong version, the case below.
  if (StartsWith(dl_error, path + ": ") && dl_error.find("undefined symbol") == std::string::npos)
    return Status::Unavailable(found + ". The file is not a loadable shared library for this "
                               "machine (damaged, or built for another platform): reinstall the "
                               "plugin, or rebuild it for this platform.");
  return Status::Unavailable(
      found + ". A library the plugin needs is missing or broken (the message above names it): "
      "install that library, or make it findable through LD_LIBRARY_PATH or the plugin's "
      "RPATH/RUNPATH (e.g. -Wl,-rpath,'$ORIGIN' for one shipped next to the plugin); `ldd " + path +
      "` lists what the plugin needs and marks what is 'not found'.");
}

// ----------------------------------------------------------- device type

// `cpu`, `CPU`, ` cpu:0 `: the host device, which the core serves itself.
bool IsHostDeviceType(const std::string& type) {
  std::string t;
  for (char c : type)
    if (!std::isspace(static_cast<unsigned char>(c)))
      t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return t.substr(0, t.find(':')) == "cpu";
}

// The device type the plugin serves (its own, or the override), or a
// refusal in *problem when that is the host device: the plugin would never
// see a tensor, and a conformance run would test the core's CPU path
// instead of the plugin while reporting success.
std::string ServedDeviceType(const hvda_plugin_v1& p, std::string* problem) {
  const std::string own = p.device_type != nullptr ? p.device_type : "";
  const std::string var = DeviceTypeVariable(p.name);
  const char* over = std::getenv(var.c_str());
  if (over != nullptr && *over != '\0') {
    if (IsHostDeviceType(over))
      *problem = var + "=" + over + " names the host device, which the core serves itself: "
                 "plugin '" + p.name + "' would never see a tensor, and a conformance run "
                 "would test the CPU path instead of the plugin. Unset " + var + ", or set it "
                 "to the device type under which the framework registers this accelerator "
                 "(the plugin's own is '" + own + "')";
    return over;
  }
  if (IsHostDeviceType(own))
    *problem = "it declares device type '" + own + "', the host device, which the core serves "
               "itself (the plugin would never see a tensor). Rebuild it with its accelerator's "
               "device type, or set " + var + " to the framework's name for that device";
  return own;
}

// ----------------------------------------------------------- validation

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

std::string DeviceTypeVariable(const char* plugin_name) {
  std::string var = "HOROVOD_";
  for (const char* c = plugin_name; c != nullptr && *c != '\0'; ++c)
    var += std::isalnum(static_cast<unsigned char>(*c)) ? static_cast<char>(std::toupper(*c)) : '_';
  return var + "_DEVICE_TYPE";
}

const char* PluginIsolationName(PluginIsolation i) {
  return i == PluginIsolation::kDeepBind ? "RTLD_DEEPBIND" : "RTLD_LOCAL";
}

PluginIsolation DefaultPluginIsolation(std::string* why) {
  std::string reason;
  PluginIsolation i = PluginIsolation::kDeepBind;
#ifndef RTLD_DEEPBIND
  i = PluginIsolation::kNone;
  reason = "this C library has no RTLD_DEEPBIND";
#else
  const char* env = std::getenv("HOROVOD_ACCEL_PLUGIN_DEEPBIND");
  const char* sanitizer = SanitizerRuntime();
  if (env != nullptr && IsOffWord(env)) {
    i = PluginIsolation::kNone;
    reason = std::string("HOROVOD_ACCEL_PLUGIN_DEEPBIND=") + env;
  } else if (sanitizer != nullptr) {
    i = PluginIsolation::kNone;
    reason = std::string("a sanitizer runtime is loaded (") + sanitizer +
             "), which refuses RTLD_DEEPBIND";
  } else {
    reason = "the default: a plugin's own dependencies win over the process's global scope";
  }
#endif
  if (why != nullptr) *why = reason;
  return i;
}

PluginLibrary::PluginLibrary(void* handle, std::string path, PluginIsolation isolation,
                             const hvda_plugin_v1* plugin, std::string device_type)
    : handle_(handle),
      path_(std::move(path)),
      isolation_(isolation),
      plugin_(plugin),
      device_type_(std::move(device_type)) {}

PluginLibrary::~PluginLibrary() {
  if (handle_ != nullptr && !keep_loaded_.load()) dlclose(handle_);
}

Status PluginLibrary::Open(const std::string& path, std::unique_ptr<PluginLibrary>* out) {
  return Open(path, DefaultPluginIsolation(), out);
}

Status PluginLibrary::Open(const std::string& path, PluginIsolation isolation,
                           std::unique_ptr<PluginLibrary>* out) {
  dlerror();
  void* handle = dlopen(path.c_str(), DlopenFlags(isolation));
  if (handle == nullptr) {
    const char* why = dlerror();
    return LoadError(path, why != nullptr ? why : "unknown dlopen error");
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
  std::string device_type = ServedDeviceType(*p, &problem);
  if (!problem.empty()) {
    dlclose(handle);
    return Status::InvalidArgument("device plugin '" + path + "' is refused: " + problem + ".");
  }
  out->reset(new PluginLibrary(handle, path, isolation, p, std::move(device_type)));
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
