// Device and backend registration. A device directory exposes one
// registration function (e.g. RegisterCpuDevice) that adds its Device factory
// and its collective backends here. The Runtime owns the registry: there is
// no process-wide mutable state.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/hal/collective_backend.h"
#include "common/hal/device.h"

namespace hvda {

struct BackendRegistration {
  std::string name;  // matches HOROVOD_CPU_OPERATIONS / HOROVOD_GPU_OPERATIONS entries
  DeviceKind device = DeviceKind::kCPU;
  // Optional: whether this process can run the backend at all (e.g. mpi
  // needs a job started by mpirun). Checked when the user names it; a non-OK
  // Status is the error the user sees, saying what to do. Same answer on
  // every rank.
  std::function<Status(const Config&)> available;
  // Whether this backend can serve the communicator at all (e.g. shm needs
  // every rank on this host). Must give the same answer on every rank.
  std::function<bool(const CommunicatorSpec&)> usable;
  // Collective over spec's ranks: every rank calls it at the same point.
  std::function<Status(const CommunicatorSpec&, std::unique_ptr<CollectiveBackend>*)> create;
  // Whether negotiation should run over this backend instead of the Gloo
  // controller transport (true for backends with microsecond latency, e.g.
  // shm). The first such backend of a process set carries its control traffic.
  bool carries_control = false;
};

struct DeviceRegistration {
  DeviceKind kind = DeviceKind::kCPU;
  std::string name;
  std::function<std::unique_ptr<Device>()> create;
};

class Registry {
 public:
  void AddDevice(DeviceRegistration d) { devices_.push_back(std::move(d)); }
  void AddBackend(BackendRegistration b) { backends_.push_back(std::move(b)); }
  const std::vector<DeviceRegistration>& devices() const { return devices_; }
  const std::vector<BackendRegistration>& backends() const { return backends_; }

 private:
  std::vector<DeviceRegistration> devices_;
  std::vector<BackendRegistration> backends_;
};

}  // namespace hvda
