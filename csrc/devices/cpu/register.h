// The CPU device's one registration call: host memory device plus the "shm"
// (same-host shared memory) and "gloo" (TCP) collective backends.
#pragma once

#include "common/hal/registry.h"

namespace hvda {

void RegisterCpuDevice(Registry* registry);

}  // namespace hvda
