// What every file of the example plugin shares: the calling thread's error
// message (hvda_plugin_v1.last_error), the settings read from the host's
// environment, and the one state object that init() creates and finalize()
// destroys. Nothing here is a global except the pointer to that object and
// the thread-local message.
#pragma once

#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "horovod_accel/plugin.h"

namespace example {

class Mesh;

// Sets the calling thread's last_error() message and returns `status`, so a
// failing path reads `return Fail(HVDA_TIMEOUT, "...")`. The message stays
// until the next failure on this thread (plugin.h: "valid until the next
// call into the plugin on that thread" is the weaker promise we keep).
hvda_status Fail(hvda_status status, std::string message);
const char* LastError();

// Runs body() and turns a C++ exception into a status: plugin.h forbids any
// exception from crossing the C boundary. Every ABI function that allocates
// runs its body through this.
template <typename Body>
hvda_status Guarded(const char* what, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return Fail(HVDA_OUT_OF_MEMORY, std::string(what) + ": out of host memory");
  } catch (const std::exception& e) {
    return Fail(HVDA_INTERNAL, std::string(what) + ": " + e.what());
  } catch (...) {
    return Fail(HVDA_INTERNAL, std::string(what) + ": unknown C++ exception");
  }
}

// The plugin's settings. Read through the host's getenv (never ::getenv), so
// that `horovodrun --check-build` and the job see the same values.
struct Settings {
  int device_count = 4;                   // HOROVOD_EXAMPLE_DEVICE_COUNT
  uint32_t address = 0x7f000001;          // HOROVOD_EXAMPLE_ADDR (IPv4, host order)
  std::string address_text = "127.0.0.1";
  // HOROVOD_ACCEL_TIMEOUT_SECONDS: the op timeout of a communicator made by
  // comm_init_rank, which carries none (a 1.0 core calls only that). A 1.1
  // core passes its value to comm_init_rank_config instead. 0 = no limit.
  double op_timeout_seconds = 300;
};

// Reads and validates the settings: HVDA_OK or HVDA_INVALID_ARGUMENT with a
// message naming the variable. No side effects (probe uses it too).
hvda_status ReadSettings(const hvda_host_api_v1* host, Settings* out);

class PluginState {
 public:
  PluginState(const hvda_host_api_v1* host, Settings settings);
  // Closes the listeners of ids nobody released and aborts communicators
  // still alive (ones the core leaked after a stuck teardown), so their
  // stream workers wind down at once. Waits for nothing (plugin.h: finalize
  // "must not wait for them").
  ~PluginState();

  const Settings& settings() const { return settings_; }
  void Log(hvda_log_level level, const std::string& message) const;

  // The listening sockets that get_unique_id opened, keyed by the id's
  // nonce. The table owns every fd in it.
  void AddListener(uint64_t nonce, int fd);
  int FindListener(uint64_t nonce);  // -1: none; the table keeps ownership
  int TakeListener(uint64_t nonce);  // -1: none; the caller now owns the fd

  // Remembers a communicator (weakly) so the destructor can abort it.
  void TrackComm(const std::shared_ptr<Mesh>& mesh);

 private:
  const hvda_host_api_v1* host_;  // the core's; valid until finalize
  const Settings settings_;
  std::mutex mu_;
  std::map<uint64_t, int> listeners_;
  std::vector<std::weak_ptr<Mesh>> comms_;
};

// The state between init and finalize; RequireState fails with a message
// telling the caller to call init first.
PluginState* State();
hvda_status RequireState(PluginState** out);
void SetState(std::unique_ptr<PluginState> state);

// HVDA_OK when `device` is a valid index (0 .. device_count-1).
hvda_status CheckDevice(int device);

}  // namespace example
