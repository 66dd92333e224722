#include "devices/cpu/register.h"

#include <memory>

#include "devices/cpu/gloo_backend.h"
#include "devices/cpu/host_device.h"

namespace hvda {
namespace {

// Same answer on every rank: it depends only on spec.size and spec.hosts,
// which the runtime builds identically everywhere.
bool AllRanksOnThisHost(const CommunicatorSpec& spec) {
  if (spec.size <= 1 || spec.hosts.size() != static_cast<size_t>(spec.size)) return false;
  for (const auto& h : spec.hosts)
    if (h != spec.hosts.front()) return false;
  return true;
}

}  // namespace

void RegisterCpuDevice(Registry* registry) {
  DeviceRegistration device;
  device.kind = DeviceKind::kCPU;
  device.name = "cpu";
  device.create = [] { return std::unique_ptr<Device>(new cpu::HostDevice()); };
  registry->AddDevice(std::move(device));

  BackendRegistration shm;
  shm.name = "shm";
  shm.device = DeviceKind::kCPU;
  // TODO(milestone 2): the shm backend is not written yet; until it is, it
  // declares itself unusable so that "shm,gloo" falls through to gloo.
  shm.usable = [](const CommunicatorSpec& spec) { return AllRanksOnThisHost(spec) && false; };
  shm.create = [](const CommunicatorSpec& spec, std::unique_ptr<CollectiveBackend>* out) {
    return Status::Unknown("shm backend is not built yet");
  };
  registry->AddBackend(std::move(shm));

  BackendRegistration gloo;
  gloo.name = "gloo";
  gloo.device = DeviceKind::kCPU;
  gloo.usable = [](const CommunicatorSpec&) { return true; };
  gloo.create = [](const CommunicatorSpec& spec, std::unique_ptr<CollectiveBackend>* out) {
    return cpu::GlooBackend::Create(spec, /*iface=*/"", out);
  };
  registry->AddBackend(std::move(gloo));
}

}  // namespace hvda
