// Device and backend registration: the one way the core learns what devices
// and collective backends exist (csrc/common/backend_selection.h chooses
// among them). A device directory exposes one registration function (e.g.
// RegisterCpuDevice in csrc/devices/cpu/register.h) that adds its Device
// factory and its collective backends here; the core never names a concrete
// device. The Runtime owns the registry (its constructor runs the
// registration functions it is given): there is no process-wide mutable
// state. A Registry is filled once, then only read (any thread).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/hal/collective_backend.h"
#include "common/hal/device.h"
#include "common/job_spec.h"

namespace hvda {

// What a device's collective backends would use on a whole job: today only
// the hierarchical (two-level) allreduce / allgather, which the autotune log
// reports in upstream's columns.
struct HierarchyUse {
  bool allreduce = false;
  bool allgather = false;
};

struct BackendRegistration {
  // Matches HOROVOD_CPU_OPERATIONS entries (kCPU backends) and, for a backend
  // that can carry negotiation, HOROVOD_CONTROLLER (see control_hint).
  std::string name;
  DeviceKind device = DeviceKind::kCPU;
  // Optional: whether this process can run the backend at all (e.g. mpi
  // needs a job started by mpirun). Checked at init when the user names it;
  // `setting` is how they named it (e.g. "HOROVOD_CPU_OPERATIONS=mpi"). A
  // non-OK Status is the error the user sees, saying what to do. Same answer
  // on every rank.
  std::function<Status(const JobSpec&, const std::string& setting)> available;
  // Whether this backend can serve the communicator at all (e.g. shm needs
  // every rank on this host). Must give the same answer on every rank.
  // Unset: always.
  std::function<bool(const CommunicatorSpec&)> usable;
  // Collective over spec's ranks: every rank calls it at the same point.
  // kCPU backends: spec.device is null. kPlugin backends: spec.device is the
  // bound accelerator (borrowed; it outlives the backend).
  std::function<Status(const CommunicatorSpec&, std::unique_ptr<CollectiveBackend>*)> create;
  // Whether negotiation should run over this backend instead of the Gloo
  // controller transport (true for backends with microsecond latency, e.g.
  // shm). The first such backend of a process set carries its control traffic.
  bool carries_control = false;
  // Non-empty: HOROVOD_CONTROLLER=<name> selects this backend for
  // negotiation; the text says how to use it, for the error listing the
  // choices (e.g. "mpi in a job started by mpirun"). create_control must then
  // be set: a communicator of spec's ranks of its own (collective like
  // create), used when the process set's data plane does not include this
  // backend.
  std::string control_hint;
  std::function<Status(const CommunicatorSpec&, std::unique_ptr<CollectiveBackend>*)>
      create_control;
};

struct DeviceRegistration {
  DeviceKind kind = DeviceKind::kCPU;
  std::string name;
  // kCPU: the host device, made once per init() generation. Unset for
  // kPlugin (accelerators are opened by the Accelerators of the Runtime).
  std::function<std::unique_ptr<Device>()> create;
  // Optional: what this device's backends use on `job` (every rank of the
  // job, with its hosts) under `settings`; same answer on every rank.
  std::function<HierarchyUse(const CommunicatorSpec& job, const Settings& settings)> hierarchy;
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

// A device's registration function (e.g. RegisterCpuDevice), as handed to
// the Runtime by whoever knows the concrete devices (the Python binding).
using DeviceRegistrar = std::function<void(Registry*)>;

}  // namespace hvda
