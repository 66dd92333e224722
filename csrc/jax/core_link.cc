#include "core_link.h"

#include <atomic>
#include <cstdint>

namespace hvda_jax {
namespace {

std::atomic<const hvda_core_api_v1*> g_api{nullptr};
std::atomic<hvda_core_runtime*> g_runtime{nullptr};

}  // namespace

const hvda_core_api_v1* CoreApi() { return g_api.load(std::memory_order_acquire); }
hvda_core_runtime* CoreRuntime() { return g_runtime.load(std::memory_order_acquire); }

std::string LinkError() {
  if (CoreApi() != nullptr && CoreRuntime() != nullptr) return "";
  return "the horovod_accel JAX library is not connected to the core; use the collectives "
         "through horovod_accel.jax (or horovod.jax), which connects it, instead of registering "
         "its FFI targets yourself.";
}

}  // namespace hvda_jax

// Returns 0, or -1 when the table is not a compatible core C API (1.1 or
// later: the handlers need enqueue_wait).
extern "C" __attribute__((visibility("default"))) int hvda_jax_set_core_api(uintptr_t table,
                                                                            uintptr_t runtime) {
  const auto* api = reinterpret_cast<const hvda_core_api_v1*>(table);
  if (api == nullptr || runtime == 0) return -1;
  if (api->major != HVDA_CORE_API_MAJOR) return -1;
  if (!HVDA_CORE_HAS_FIELD(api, hvda_core_api_v1, enqueue_wait)) return -1;
  hvda_jax::g_runtime.store(reinterpret_cast<hvda_core_runtime*>(runtime),
                            std::memory_order_release);
  hvda_jax::g_api.store(api, std::memory_order_release);
  return 0;
}
