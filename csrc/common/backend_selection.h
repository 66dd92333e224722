// Backend selection: which collective backends (data planes) and which
// control transport (negotiation) a process set uses, and which backend runs
// its accelerator collectives. Chosen only through the Registry
// (common/hal/registry.h): the core names no concrete device or backend here
// except the Gloo controller transport, its own default.
//
// The rules, as upstream's settings mean them:
//  - data plane: the HOROVOD_CPU_OPERATIONS entries in order, each a
//    registered kCPU backend, skipping those not usable on the set's ranks
//    (e.g. shm across hosts) and upstream names this build lacks; at least
//    one must remain;
//  - control: HOROVOD_CONTROLLER=<name> other than gloo selects the
//    registered backend with that control name (sharing the set's data-plane
//    backend of that name when there is one, else a communicator of its
//    own); otherwise the first data-plane backend that carries_control, with
//    eager pacing (NOTE [Cycle pacing]); otherwise a Gloo controller
//    transport.
//
// Thread-safety: const after Create; the registry must outlive it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/hal/collective_backend.h"
#include "common/hal/registry.h"
#include "common/transport/controller_transport.h"
#include "common/job_spec.h"
#include "common/util/status.h"

namespace hvda {

// Lower-cased entries of a comma-separated setting, whitespace removed,
// empty entries dropped.
std::vector<std::string> SplitSelectionList(const std::string& s);

// What CreateProcessSetPlanes made for one process set.
struct ProcessSetPlanes {
  // In HOROVOD_CPU_OPERATIONS order; never empty on success.
  std::vector<std::unique_ptr<CollectiveBackend>> backends;
  // May borrow one of `backends`: destroy it first (ProcessSetState's member
  // order does).
  std::unique_ptr<ControllerTransport> transport;
  bool eager_pacing = false;  // NOTE [Cycle pacing]
  std::string negotiation;    // what carries negotiation, for the debug log
};

class BackendSelection {
 public:
  BackendSelection() = default;

  // Reads HOROVOD_CONTROLLER and HOROVOD_CPU_OPERATIONS and checks them
  // before any peer is contacted, so every rank fails alike: InvalidArgument
  // for an unknown controller; a registration's `available` error for a
  // backend this process cannot run (e.g. mpi outside mpirun). An unknown
  // HOROVOD_CPU_OPERATIONS name is reported by CreateProcessSetPlanes, as
  // before. registry: borrowed, outlives *out.
  static Status Create(const Registry* registry, const JobSpec& job, BackendSelection* out);

  // "gloo" (the default) or the control name of a registered backend.
  const std::string& controller() const { return controller_; }

  // What the registered devices' backends use on `job` (every rank of the
  // job, with its hosts): the autotune log's hierarchical columns.
  HierarchyUse Hierarchy(const CommunicatorSpec& job, const Settings& settings) const;

  // Collective over spec's ranks: every member calls it at the same point,
  // and blocks until each communicator is connected (up to
  // spec.timeout_seconds). spec.job must be set; spec.prefix is the
  // set's store-key prefix, under which each communicator gets its own.
  // `gloo_iface`: HOROVOD_GLOO_IFACE, for the Gloo controller transport.
  Status CreateProcessSetPlanes(const CommunicatorSpec& spec, const std::string& gloo_iface,
                                ProcessSetPlanes* out) const;

  // Collective over spec's ranks: the first registered backend of device
  // kind `kind` (an accelerator's: kPlugin, with spec.device the bound
  // device). Unavailable when none is registered.
  Status CreateDeviceBackend(DeviceKind kind, const CommunicatorSpec& spec,
                             std::unique_ptr<CollectiveBackend>* out) const;

 private:
  const BackendRegistration* FindCpu(const std::string& name) const;  // the last so named
  const BackendRegistration* FindController(const std::string& name) const;

  const Registry* registry_ = nullptr;
  std::string controller_ = "gloo";
};

}  // namespace hvda
