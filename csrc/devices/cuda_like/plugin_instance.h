// The state of one loaded vendor plugin library and the error plumbing its
// C entry points share.
//
// NOTE [One instance per library]: the plugin ABI's functions carry no
// context argument (like NCCL's plugin tables), so each vendor plugin
// library keeps exactly one PluginInstance: created by the plugin's init,
// destroyed by finalize, reached through Instance(). Nothing else in the
// plugin is mutable and library-wide. Calls other than probe/init/
// last_error before init (or after finalize) fail with HVDA_INTERNAL.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "devices/cuda_like/vendor_api.h"
#include "devices/cuda_like/vendor_spec.h"
#include "horovod_accel/plugin.h"

namespace hvda {
namespace vendor {

// hvda_stream_t behind the ABI.
struct PluginStream {
  NativeStream native = nullptr;
  int device = 0;
  bool owned = false;  // created here (destroyed with the handle) or wrapped
  // Pinned host memory for staged kernels (host_kernels.h), reused in this
  // stream's order; freed (after a stream sync) with the handle.
  void* staging = nullptr;
  size_t staging_bytes = 0;
};

// hvda_event_t behind the ABI.
struct PluginEvent {
  NativeEvent native = nullptr;
  int device = 0;
};

// hvda_comm_t behind the ABI.
struct PluginComm {
  NativeComm native = nullptr;
  int device = 0;
  int nranks = 0, rank = 0;
  bool aborted = false;  // the library freed it in comm_abort
  // HOROVOD_ACCEL_TIMEOUT_SECONDS as the core passed it (ABI 1.1; 0 = none).
  double op_timeout_seconds = 0;
};

class PluginInstance {
 public:
  PluginInstance(const VendorSpec* spec, const hvda_host_api_v1* host,
                 std::unique_ptr<LoadedVendor> vendor)
      : spec_(spec), host_(host), vendor_(std::move(vendor)) {}
  ~PluginInstance();

  const VendorSpec& spec() const { return *spec_; }
  const VendorApi& api() const { return vendor_->api(); }
  void Log(hvda_log_level level, const std::string& message) const;

  // A one-rank communicator on `device` (created on first use, destroyed
  // with the instance): the plugin scales buffers with a PreMulSum
  // allreduce on it, since it cannot ship kernels of its own.
  hvda_status SelfComm(int device, NativeComm* comm);

  // The vendor TF plugin's stream mapper once found (NOTE [TensorFlow
  // streams] in framework_streams.h), else null. Thread-safe.
  void* TfStreamMapper() const { return tf_stream_mapper_.load(std::memory_order_acquire); }
  void SetTfStreamMapper(void* fn) { tf_stream_mapper_.store(fn, std::memory_order_release); }

 private:
  const VendorSpec* spec_;
  const hvda_host_api_v1* host_;  // borrowed, valid until finalize
  std::unique_ptr<LoadedVendor> vendor_;
  std::mutex mu_;
  std::map<int, NativeComm> self_comms_;  // by device
  std::atomic<void*> tf_stream_mapper_{nullptr};
};

// The library's instance (NOTE [One instance per library]); null before init.
PluginInstance* Instance();
void SetInstance(std::unique_ptr<PluginInstance> instance);

// Per-thread message of the last failed call (hvda_plugin_v1.last_error).
const char* LastError();
hvda_status Fail(hvda_status status, const std::string& message);
// Checks a runtime result: 0 is HVDA_OK; otherwise records "<symbol> failed:
// <vendor message>" and returns the matching status (clearing the runtime's
// sticky last error).
hvda_status RuntimeResult(const PluginInstance& p, int result, const char* symbol);
// Checks a collective-library result likewise (in-progress counts as OK).
hvda_status CclResult(const PluginInstance& p, int result, const char* symbol);

// The instance, or HVDA_INTERNAL with a message when the plugin is not
// initialized.
hvda_status Require(PluginInstance** p);

// First line of every ABI entry point: declares `p`, the instance, or
// returns Require's failure.
#define HVDA_REQUIRE(p)        \
  PluginInstance* p = nullptr; \
  if (hvda_status s_ = Require(&p)) return s_

}  // namespace vendor
}  // namespace hvda
