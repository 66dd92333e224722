// Error messages, settings and the plugin state object (plugin_state.h).
#include "plugin_state.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <utility>

#include "tcp_mesh.h"

namespace example {

namespace {

thread_local std::string t_last_error;  // per thread, as plugin.h asks
std::unique_ptr<PluginState> g_state;   // set by init, reset by finalize

const char* HostGetenv(const hvda_host_api_v1* host, const char* name) {
  return host != nullptr && host->getenv != nullptr ? host->getenv(host, name) : nullptr;
}

}  // namespace

hvda_status Fail(hvda_status status, std::string message) {
  t_last_error = std::move(message);
  return status;
}

const char* LastError() { return t_last_error.c_str(); }

hvda_status ReadSettings(const hvda_host_api_v1* host, Settings* out) {
  Settings s;
  if (const char* v = HostGetenv(host, "HOROVOD_EXAMPLE_DEVICE_COUNT")) {
    char* end = nullptr;
    errno = 0;
    long n = std::strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || n < 0 || n > 1024)
      return Fail(HVDA_INVALID_ARGUMENT, std::string("HOROVOD_EXAMPLE_DEVICE_COUNT='") + v +
                                             "' is not a device count (0..1024): unset it "
                                             "(default 4) or set e.g. 4");
    s.device_count = static_cast<int>(n);
  }
  if (const char* v = HostGetenv(host, "HOROVOD_EXAMPLE_ADDR")) {
    in_addr a{};
    if (inet_pton(AF_INET, v, &a) != 1)
      return Fail(HVDA_INVALID_ARGUMENT, std::string("HOROVOD_EXAMPLE_ADDR='") + v +
                                             "' is not an IPv4 address: set it to this host's "
                                             "address that the other hosts reach, e.g. 10.0.0.5");
    s.address = ntohl(a.s_addr);
    s.address_text = v;
  }
  if (const char* v = HostGetenv(host, "HOROVOD_ACCEL_TIMEOUT_SECONDS")) {
    char* end = nullptr;
    double t = std::strtod(v, &end);
    if (end == v || *end != '\0' || !(t >= 0))
      return Fail(HVDA_INVALID_ARGUMENT, std::string("HOROVOD_ACCEL_TIMEOUT_SECONDS='") + v +
                                             "' is not a number of seconds >= 0 (0 = no limit)");
    s.op_timeout_seconds = t;
  }
  *out = std::move(s);
  return HVDA_OK;
}

PluginState::PluginState(const hvda_host_api_v1* host, Settings settings)
    : host_(host), settings_(std::move(settings)) {}

PluginState::~PluginState() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& entry : listeners_) ::close(entry.second);
  for (auto& weak : comms_) {
    if (std::shared_ptr<Mesh> mesh = weak.lock()) mesh->Abort();
  }
}

void PluginState::Log(hvda_log_level level, const std::string& message) const {
  if (host_ != nullptr && host_->log != nullptr) host_->log(host_, level, message.c_str());
}

void PluginState::AddListener(uint64_t nonce, int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  listeners_[nonce] = fd;
}

int PluginState::FindListener(uint64_t nonce) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = listeners_.find(nonce);
  return it == listeners_.end() ? -1 : it->second;
}

int PluginState::TakeListener(uint64_t nonce) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = listeners_.find(nonce);
  if (it == listeners_.end()) return -1;
  int fd = it->second;
  listeners_.erase(it);
  return fd;
}

void PluginState::TrackComm(const std::shared_ptr<Mesh>& mesh) {
  std::lock_guard<std::mutex> lock(mu_);
  // Forget destroyed communicators so the list does not grow without bound.
  std::vector<std::weak_ptr<Mesh>> live;
  for (auto& weak : comms_)
    if (!weak.expired()) live.push_back(weak);
  live.push_back(mesh);
  comms_ = std::move(live);
}

PluginState* State() { return g_state.get(); }

hvda_status RequireState(PluginState** out) {
  *out = g_state.get();
  if (*out == nullptr)
    return Fail(HVDA_INTERNAL, "example plugin: not initialized: call hvda_plugin_v1.init first");
  return HVDA_OK;
}

void SetState(std::unique_ptr<PluginState> state) { g_state = std::move(state); }

hvda_status CheckDevice(int device) {
  PluginState* state = nullptr;
  if (hvda_status s = RequireState(&state)) return s;
  const int count = state->settings().device_count;
  if (device < 0 || device >= count)
    return Fail(HVDA_INVALID_ARGUMENT,
                "example device " + std::to_string(device) + " does not exist: there are " +
                    std::to_string(count) + " (HOROVOD_EXAMPLE_DEVICE_COUNT)");
  return HVDA_OK;
}

}  // namespace example
