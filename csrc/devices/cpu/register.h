// The CPU device's one registration call: host memory device plus the "shm"
// (same-host shared memory), "gloo" (TCP, two-level across hosts) and "mpi"
// (a job started by mpirun; also HOROVOD_CONTROLLER=mpi) collective
// backends. The core does not call it: whoever builds a Runtime passes it
// (csrc/python/runtime_binding.cc), as a DeviceRegistrar.
#pragma once

#include "common/hal/registry.h"

namespace hvda {

void RegisterCpuDevice(Registry* registry);

}  // namespace hvda
