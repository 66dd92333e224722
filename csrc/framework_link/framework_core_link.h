// The link from a framework library (the TensorFlow op library, the JAX FFI
// library) to the horovod_accel core: the core's C API table and runtime
// (csrc/include/horovod_accel/core_api.h), handed over by Python through the
// library's exported setter. Header-only: each library holds one CoreLink of
// its own (it is never shared across libraries).
//
// Thread-safety: Connect() may run while kernels read the link; readers see
// either nothing or both values (the runtime is stored before the table, and
// the table is what readers test). Both stay valid for the rest of the
// process once stored (core_api.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "horovod_accel/core_api.h"

namespace hvda_link {

class CoreLink {
 public:
  // Stores the table and runtime addresses of `_core.Runtime.c_api()` when
  // the table has this build's major version and at least `min_size` bytes
  // (up to the last entry the library calls). False, storing nothing,
  // otherwise. May be called again with the same values.
  bool Connect(uintptr_t table, uintptr_t runtime, size_t min_size) {
    const auto* api = reinterpret_cast<const hvda_core_api_v1*>(table);
    if (api == nullptr || runtime == 0) return false;
    if (api->major != HVDA_CORE_API_MAJOR || api->struct_size < min_size) return false;
    runtime_.store(reinterpret_cast<hvda_core_runtime*>(runtime), std::memory_order_release);
    api_.store(api, std::memory_order_release);
    return true;
  }

  // Null until connected.
  const hvda_core_api_v1* api() const { return api_.load(std::memory_order_acquire); }
  hvda_core_runtime* runtime() const { return runtime_.load(std::memory_order_acquire); }
  bool connected() const { return api() != nullptr && runtime() != nullptr; }

 private:
  std::atomic<const hvda_core_api_v1*> api_{nullptr};
  std::atomic<hvda_core_runtime*> runtime_{nullptr};
};

}  // namespace hvda_link
