#include "devices/cpu/register.h"

#include <memory>
#include <optional>
#include <string>

#include "devices/cpu/gloo_backend.h"
#include "devices/cpu/hierarchical_backend.h"
#include "devices/cpu/host_device.h"
#include "devices/cpu/mpi_backend.h"
#include "devices/cpu/shm_backend.h"
#include "common/job_spec.h"

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

// HOROVOD_HIERARCHICAL_ALLREDUCE / _ALLGATHER as set; unset: on (the ranks
// span hosts with several ranks on one, which HasHierarchy checked): on the
// CPU the host level is shared memory, so it always beats TCP between
// ranks of one host.
bool HierarchyWanted(const std::optional<bool>& setting) { return setting.value_or(true); }

}  // namespace

void RegisterCpuDevice(Registry* registry) {
  DeviceRegistration device;
  device.kind = DeviceKind::kCPU;
  device.name = "cpu";
  device.create = [] { return std::unique_ptr<Device>(new cpu::HostDevice()); };
  // The autotune log's hierarchical columns: what the "gloo" backend below
  // builds on the whole job (not tuned).
  device.hierarchy = [](const CommunicatorSpec& job, const Settings& settings) {
    HierarchyUse use;
    if (cpu::HierarchicalBackend::HasHierarchy(job)) {
      use.allreduce = HierarchyWanted(settings.hierarchical_allreduce);
      use.allgather = HierarchyWanted(settings.hierarchical_allgather);
    }
    return use;
  };
  registry->AddDevice(std::move(device));

  BackendRegistration shm;
  shm.name = "shm";
  shm.device = DeviceKind::kCPU;
  // Only when every rank of the communicator is on this host; otherwise
  // "shm,gloo" falls through to gloo.
  shm.usable = AllRanksOnThisHost;
  shm.carries_control = true;
  shm.create = [](const CommunicatorSpec& spec, std::unique_ptr<CollectiveBackend>* out) {
    // The table bounds it (>= 4096, settings_table.h).
    const int64_t bytes = spec.job != nullptr ? spec.job->settings.shm_segment_bytes
                                              : cpu::ShmBackend::kDefaultSegmentBytes;
    return cpu::ShmBackend::Create(spec, bytes, out);
  };
  registry->AddBackend(std::move(shm));

  BackendRegistration gloo;
  gloo.name = "gloo";
  gloo.device = DeviceKind::kCPU;
  gloo.usable = [](const CommunicatorSpec&) { return true; };
  gloo.create = [](const CommunicatorSpec& spec, std::unique_ptr<CollectiveBackend>* out) {
    // HOROVOD_GLOO_IFACE, as for the controller's Gloo context; empty:
    // loopback on one host, else the host name's address (gloo_context.h).
    const std::string iface = spec.job != nullptr ? spec.job->settings.gloo_iface : "";
    if (spec.job != nullptr && cpu::HierarchicalBackend::HasHierarchy(spec)) {
      const Settings& s = spec.job->settings;
      cpu::HierarchicalLevels levels{HierarchyWanted(s.hierarchical_allreduce),
                                     HierarchyWanted(s.hierarchical_allgather)};
      if (levels.allreduce || levels.allgather)
        return cpu::HierarchicalBackend::Create(spec, iface, s.shm_segment_bytes, levels, out);
    }
    return cpu::GlooBackend::Create(spec, iface, out);
  };
  registry->AddBackend(std::move(gloo));

  // The launcher's MPI, in a job started by mpirun (mpi_backend.h); named
  // explicitly only (not in the default list). Usable for any layout once
  // available, which hvd.init() decides alike on every rank.
  BackendRegistration mpi;
  mpi.name = "mpi";
  mpi.device = DeviceKind::kCPU;
  mpi.available = cpu::MpiBackend::JobAvailable;
  mpi.usable = [](const CommunicatorSpec&) { return true; };
  mpi.create = cpu::MpiBackend::CreateForJob;
  // HOROVOD_CONTROLLER=mpi: negotiation over the job's MPI, on the data
  // plane's mpi communicator when the set has one, else on its own.
  mpi.control_hint = "mpi in a job started by mpirun";
  mpi.create_control = cpu::MpiBackend::CreateForJob;
  registry->AddBackend(std::move(mpi));
}

}  // namespace hvda
