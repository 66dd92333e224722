#include "common/plugin/plugin_library.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <string>
#include <utility>

#include "common/plugin/plugin_abi.h"
#include "common/util/settings.h"

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
                               dl_error + "). Check the name or path in " +
                               setting_env::accel_plugins +
                               " (or the plugin package's entry point), or install the plugin.");
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
  // Not in the settings table: the variable is named after each plugin, and
  // it is read wherever a plugin is opened, also outside init() (probes).
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
  std::string var = "HOROVOD_";  // HOROVOD_<NAME>_DEVICE_TYPE: one per plugin, not in the table
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
  // Not in the settings table: read wherever a plugin is opened, also
  // outside init() (`horovodrun --check-build`'s probe), and it takes the
  // loader's off-words (0, false, off, no) rather than a setting's boolean.
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
                             const hvda_plugin_v1* plugin, PluginOps ops, std::string device_type)
    : handle_(handle),
      path_(std::move(path)),
      isolation_(isolation),
      plugin_(plugin),
      ops_(std::move(ops)),
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
  PluginOps ops;
  if (p == nullptr) {
    problem = "its entry point declined this core's plugin ABI " +
              std::to_string(HVDA_PLUGIN_ABI_MAJOR) + "." + std::to_string(HVDA_PLUGIN_ABI_MINOR);
  } else {
    problem = AdaptPlugin(*p, &ops);
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
  out->reset(
      new PluginLibrary(handle, path, isolation, p, std::move(ops), std::move(device_type)));
  return Status::OK();
}

Status PluginLibrary::Probe(const hvda_host_api_v1* host) const {
  hvda_status s = ops_.probe(host);
  if (s == HVDA_OK) return Status::OK();
  return Error(s, std::string("device plugin '") + plugin_->name + "' is not usable here");
}

Status PluginLibrary::Error(hvda_status code, const std::string& what) const {
  const char* msg = ops_.last_error();
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
