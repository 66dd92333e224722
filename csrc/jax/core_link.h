// How the JAX FFI handlers reach the core: the core C API table and the
// runtime, handed over once by Python (horovod_accel/jax/xla_link.py) through
// the exported hvda_jax_set_core_api. Both live until the process exits
// (core_api.h), so the handlers read them without locking.
#pragma once

#include <string>

#include "horovod_accel/core_api.h"

namespace hvda_jax {

const hvda_core_api_v1* CoreApi();       // null until connected
hvda_core_runtime* CoreRuntime();        // null until connected
// Why the library is not connected ("" when it is).
std::string LinkError();

}  // namespace hvda_jax
