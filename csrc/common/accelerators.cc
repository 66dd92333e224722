#include "common/accelerators.h"

#include <algorithm>

#include "common/util/settings.h"

namespace hvda {

Accelerators::~Accelerators() {
  bound_.reset();
  for (auto& p : plugins_)
    if (p.lib) p.lib->ops().finalize();
}

void Accelerators::Load(const std::vector<std::string>& paths) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const std::string& path : paths) {
    if (std::any_of(plugins_.begin(), plugins_.end(),
                    [&](const Plugin& p) { return p.path == path; }))
      continue;  // loaded by an earlier generation
    Plugin p;
    p.path = path;
    std::unique_ptr<PluginLibrary> lib;
    Status st = PluginLibrary::Open(path, &lib);
    if (st.ok()) {
      p.device_type = lib->device_type();
      hvda_status s = lib->ops().init(&host_.api);
      if (s != HVDA_OK) st = lib->Error(s, std::string("device plugin '") + lib->plugin().name + "' init");
    }
    if (st.ok()) {
      p.lib = std::move(lib);
    } else {
      p.why = st.reason();
      if (log_ != nullptr)
        log_->Log(LogLevel::kWarning, "device plugin " + path + " is not usable: " + p.why);
    }
    plugins_.push_back(std::move(p));
  }
}

std::string Accelerators::Known() const {
  std::string known;
  for (const auto& p : plugins_)
    if (p.lib) known += (known.empty() ? "'" : ", '") + p.device_type + "'";
  return known.empty() ? "none" : known;
}

Status Accelerators::BindLocked(const Plugin& p, int index) {
  int count = 0;
  hvda_status s = p.lib->ops().device.device_count(&count);
  if (s != HVDA_OK) return p.lib->Error(s, "device_count");
  if (index < 0 || index >= count)
    return Status::InvalidArgument("tensor is on " + p.device_type + ":" + std::to_string(index) +
                                   ", but the '" + p.lib->plugin().name + "' plugin sees " +
                                   std::to_string(count) + " device(s).");
  bound_ = std::make_shared<PluginDevice>(p.lib, index);
  bound_type_ = p.device_type;
  return Status::OK();
}

Status Accelerators::Bind(const std::string& device_type, int index,
                          std::shared_ptr<PluginDevice>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (bound_) {
    if (bound_type_ == device_type && bound_->index() == index) {
      *out = bound_;
      return Status::OK();
    }
    return Status::InvalidArgument(
        "this rank already runs its accelerator collectives on " + bound_type_ + ":" +
        std::to_string(bound_->index()) + "; a tensor on " + device_type + ":" +
        std::to_string(index) + " cannot join them. Use one accelerator per process (e.g. " +
        "torch.device('" + device_type + "', hvd.local_rank())) for every Horovod op.");
  }
  // A plugin of this device type, else why the one that should have been it
  // is unusable (a library that failed to open has no known type).
  const Plugin* unusable = nullptr;
  for (const auto& p : plugins_) {
    if (p.lib && p.device_type == device_type) {
      HVDA_RETURN_IF_ERROR(BindLocked(p, index));
      *out = bound_;
      return Status::OK();
    }
    if (!p.lib && (p.device_type == device_type || p.device_type.empty())) unusable = &p;
  }
  if (unusable != nullptr)
    return Status::InvalidArgument("tensor is on " + device_type + ":" + std::to_string(index) +
                                   ", but the device plugin for it is not usable: " +
                                   unusable->why);
  return Status::InvalidArgument(
      "tensor is on " + device_type + ":" + std::to_string(index) + ", but no device plugin for '" +
      device_type + "' is loaded (loaded: " + Known() + "). Install its plugin (e.g. pip install "
      "horovod_accel_" + device_type + ") or name it in " + setting_env::accel_plugins +
      ", or move the tensor to the CPU.");
}

std::shared_ptr<PluginDevice> Accelerators::device(int local_rank, std::string* why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (bound_) return bound_;
  for (const auto& p : plugins_) {
    if (!p.lib) continue;
    int count = 0;
    if (p.lib->ops().device.device_count(&count) != HVDA_OK || count <= 0) continue;
    Status st = BindLocked(p, local_rank % count);
    if (st.ok()) return bound_;
    *why = st.reason();
    return nullptr;
  }
  *why = "no device plugin is usable on this rank (loaded: " + Known() + ")";
  return nullptr;
}

Status Accelerators::Activity(const std::string& device_type,
                              std::vector<std::pair<std::string, uint64_t>>* counts) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& p : plugins_) {
    if (p.lib && p.device_type == device_type) {
      *counts = p.lib->activity().Snapshot();
      return Status::OK();
    }
  }
  return Status::InvalidArgument("no usable device plugin serves the device type '" +
                                 device_type + "' (loaded: " + Known() + ")");
}

void Accelerators::EndGeneration() {
  std::lock_guard<std::mutex> lock(mu_);
  bound_.reset();
  bound_type_.clear();
}

}  // namespace hvda
