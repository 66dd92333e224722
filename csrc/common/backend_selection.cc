#include "common/backend_selection.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "common/transport/backend_controller_transport.h"
#include "common/transport/gloo_context.h"
#include "common/transport/gloo_controller_transport.h"

namespace hvda {

std::vector<std::string> SplitSelectionList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(std::remove_if(item.begin(), item.end(), ::isspace), item.end());
    std::transform(item.begin(), item.end(), item.begin(), ::tolower);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

const BackendRegistration* BackendSelection::FindCpu(const std::string& name) const {
  const BackendRegistration* reg = nullptr;
  for (const auto& b : registry_->backends())
    if (b.name == name && b.device == DeviceKind::kCPU) reg = &b;
  return reg;
}

const BackendRegistration* BackendSelection::FindController(const std::string& name) const {
  for (const auto& b : registry_->backends())
    if (b.name == name && !b.control_hint.empty() && b.create_control) return &b;
  return nullptr;
}

Status BackendSelection::Create(const Registry* registry, const JobSpec& job,
                                BackendSelection* out) {
  BackendSelection sel;
  sel.registry_ = registry;
  const std::vector<std::string> controller =
      SplitSelectionList(job.settings.controller);
  sel.controller_ = controller.empty() ? "gloo" : controller[0];
  if (sel.controller_ != "gloo") {
    const BackendRegistration* reg = sel.FindController(sel.controller_);
    if (reg == nullptr) {
      std::string choices = "gloo (the default)";
      for (const auto& b : registry->backends())
        if (!b.control_hint.empty() && b.create_control) choices += ", or " + b.control_hint;
      return Status::InvalidArgument(std::string(setting_env::controller) + "=" + sel.controller_ +
                                     " is not available in this build; use " + choices + ".");
    }
    if (reg->available)
      HVDA_RETURN_IF_ERROR(
          reg->available(job, std::string(setting_env::controller) + "=" + sel.controller_));
  }
  // Backends that this process cannot run at all (mpi under horovodrun)
  // fail here, alike on every rank, before any peer is contacted.
  for (const std::string& name : SplitSelectionList(job.settings.cpu_operations))
    for (const auto& b : registry->backends())
      if (b.name == name && b.device == DeviceKind::kCPU && b.available)
        HVDA_RETURN_IF_ERROR(
            b.available(job, std::string(setting_env::cpu_operations) + "=" + name));
  *out = std::move(sel);
  return Status::OK();
}

HierarchyUse BackendSelection::Hierarchy(const CommunicatorSpec& job,
                                         const Settings& settings) const {
  HierarchyUse use;
  for (const auto& d : registry_->devices()) {
    if (!d.hierarchy) continue;
    HierarchyUse h = d.hierarchy(job, settings);
    use.allreduce = use.allreduce || h.allreduce;
    use.allgather = use.allgather || h.allgather;
  }
  return use;
}

Status BackendSelection::CreateProcessSetPlanes(const CommunicatorSpec& set_spec,
                                                const std::string& gloo_iface,
                                                ProcessSetPlanes* out) const {
  const JobSpec& job = *set_spec.job;
  const std::string prefix = set_spec.prefix;
  CommunicatorSpec spec = set_spec;
  ProcessSetPlanes planes;
  CollectiveBackend* control = nullptr;       // first backend that carries_control
  CollectiveBackend* named_control = nullptr;  // the HOROVOD_CONTROLLER backend, if a data plane
  const std::string& wanted = job.settings.cpu_operations;
  for (const std::string& name : SplitSelectionList(wanted)) {
    const BackendRegistration* reg = FindCpu(name);
    if (reg == nullptr) {
      if (IsUpstreamCpuOperationNotBuilt(name)) continue;
      std::string known;
      for (const auto& b : registry_->backends())
        if (b.device == DeviceKind::kCPU) known += (known.empty() ? "" : ", ") + b.name;
      return Status::InvalidArgument(std::string(setting_env::cpu_operations) + " names '" + name +
                                     "', which this build does not have; known: " + known + ".");
    }
    if (reg->available)
      HVDA_RETURN_IF_ERROR(
          reg->available(job, std::string(setting_env::cpu_operations) + "=" + name));
    if (reg->usable && !reg->usable(spec)) continue;
    spec.prefix = prefix + name + "/";
    std::unique_ptr<CollectiveBackend> backend;
    HVDA_RETURN_IF_ERROR(reg->create(spec, &backend));
    if (reg->carries_control && control == nullptr) control = backend.get();
    if (controller_ != "gloo" && name == controller_ && named_control == nullptr)
      named_control = backend.get();
    planes.backends.push_back(std::move(backend));
  }
  if (planes.backends.empty())
    return Status::InvalidArgument(std::string(setting_env::cpu_operations) + "='" + wanted +
                                   "' leaves no usable CPU backend; use e.g. shm,gloo.");
  if (controller_ != "gloo") {
    // HOROVOD_CONTROLLER=<name>: negotiation over that backend, sharing the
    // data plane's when there is one (safe: this thread issues control and
    // data in the same order on every rank), else over a communicator of
    // its own. Paced like Gloo (NOTE [Cycle pacing]).
    if (named_control != nullptr) {
      planes.transport = std::make_unique<BackendControllerTransport>(named_control);
    } else {
      const BackendRegistration* reg = FindController(controller_);
      if (reg == nullptr)
        return Status::InvalidArgument(std::string(setting_env::controller) + "=" + controller_ +
                                       " is not available in this build.");
      spec.prefix = prefix + "ctrl-" + controller_ + "/";
      std::unique_ptr<CollectiveBackend> own;
      HVDA_RETURN_IF_ERROR(reg->create_control(spec, &own));
      planes.transport = std::make_unique<BackendControllerTransport>(std::move(own));
    }
    planes.negotiation = controller_;
  } else if (control != nullptr) {
    planes.transport = std::make_unique<BackendControllerTransport>(control);
    planes.eager_pacing = true;  // NOTE [Cycle pacing]
    planes.negotiation = control->name();
  } else {
    spec.prefix = prefix + "ctrl/";
    std::shared_ptr<gloo::Context> ctx;
    HVDA_RETURN_IF_ERROR(CreateGlooContext(spec, gloo_iface, &ctx));
    planes.transport = std::make_unique<GlooControllerTransport>(ctx);
    planes.negotiation = "gloo";
  }
  *out = std::move(planes);
  return Status::OK();
}

Status BackendSelection::CreateDeviceBackend(DeviceKind kind, const CommunicatorSpec& spec,
                                             std::unique_ptr<CollectiveBackend>* out) const {
  for (const auto& b : registry_->backends())
    if (b.device == kind && b.create) return b.create(spec, out);
  return Status::Unavailable("no collective backend is registered for this device kind");
}

}  // namespace hvda
