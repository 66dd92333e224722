#include "devices/cuda_like/plugin_instance.h"

namespace hvda {
namespace vendor {
namespace {

thread_local std::string last_error_message;

// NOTE [One instance per library].
std::unique_ptr<PluginInstance>& Slot() {
  static std::unique_ptr<PluginInstance> instance;
  return instance;
}

}  // namespace

PluginInstance* Instance() { return Slot().get(); }
void SetInstance(std::unique_ptr<PluginInstance> instance) { Slot() = std::move(instance); }

PluginInstance::~PluginInstance() {
  for (auto& kv : self_comms_) api().comm_destroy(kv.second);
}

void PluginInstance::Log(hvda_log_level level, const std::string& message) const {
  if (host_ != nullptr && host_->log != nullptr) host_->log(host_, level, message.c_str());
}

hvda_status PluginInstance::SelfComm(int device, NativeComm* comm) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = self_comms_.find(device);
  if (it != self_comms_.end()) {
    *comm = it->second;
    return HVDA_OK;
  }
  const VendorApi& a = api();
  UniqueId id{};
  if (auto s = RuntimeResult(*this, a.set_device(device), spec_->rt.set_device)) return s;
  if (auto s = CclResult(*this, a.get_unique_id(&id), spec_->ccl.get_unique_id)) return s;
  NativeComm c = nullptr;
  if (auto s = CclResult(*this, a.comm_init_rank(&c, 1, id, 0), spec_->ccl.comm_init_rank))
    return s;
  self_comms_[device] = c;
  *comm = c;
  return HVDA_OK;
}

const char* LastError() { return last_error_message.c_str(); }

hvda_status Fail(hvda_status status, const std::string& message) {
  last_error_message = message;
  return status;
}

hvda_status RuntimeResult(const PluginInstance& p, int result, const char* symbol) {
  if (result == 0) return HVDA_OK;
  const VendorApi& a = p.api();
  const char* text = a.rt_error_string != nullptr ? a.rt_error_string(result) : nullptr;
  a.get_last_error();  // clear the runtime's last error so later calls start clean
  const hvda_status s = result == 2 ? HVDA_OUT_OF_MEMORY : HVDA_DEVICE_ERROR;
  return Fail(s, std::string(symbol) + " failed: " + (text ? text : "unknown error") + " (" +
                     p.spec().runtime_name + " error " + std::to_string(result) + ")");
}

hvda_status CclResult(const PluginInstance& p, int result, const char* symbol) {
  const VendorSpec& spec = p.spec();
  if (result == 0 || result == spec.ccl_in_progress) return HVDA_OK;
  const char* text = p.api().ccl_error_string ? p.api().ccl_error_string(result) : nullptr;
  hvda_status s = HVDA_DEVICE_ERROR;
  if (result == spec.ccl_remote_error) s = HVDA_REMOTE_ERROR;
  if (result == 4 || result == 5) s = HVDA_INVALID_ARGUMENT;  // invalid argument / usage
  return Fail(s, std::string(symbol) + " failed: " + (text ? text : "unknown error") + " (" +
                     spec.ccl_name + " result " + std::to_string(result) + ")");
}

hvda_status Require(PluginInstance** p) {
  *p = Instance();
  if (*p != nullptr) return HVDA_OK;
  return Fail(HVDA_INTERNAL, "the device plugin was called before init() (or after finalize())");
}

}  // namespace vendor
}  // namespace hvda
