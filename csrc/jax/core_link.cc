#include "core_link.h"

#include <cstddef>
#include <cstdint>

#include "framework_core_link.h"

namespace hvda_jax {
namespace {

hvda_link::CoreLink& Link() {
  static hvda_link::CoreLink link;
  return link;
}

}  // namespace

const hvda_core_api_v1* CoreApi() { return Link().api(); }
hvda_core_runtime* CoreRuntime() { return Link().runtime(); }

std::string LinkError() {
  if (Link().connected()) return "";
  return "the horovod_accel JAX library is not connected to the core; use the collectives "
         "through horovod_accel.jax (or horovod.jax), which connects it, instead of "
         "registering its FFI targets yourself.";
}

}  // namespace hvda_jax

// Returns 0, or -1 when the table is not a compatible core C API (1.1 or
// later: the handlers need enqueue_wait and the device fields of an op).
extern "C" __attribute__((visibility("default"))) int hvda_jax_set_core_api(uintptr_t table,
                                                                            uintptr_t runtime) {
  constexpr size_t kNeeds = offsetof(hvda_core_api_v1, enqueue_wait) +
                            sizeof(hvda_core_api_v1::enqueue_wait);
  return hvda_jax::Link().Connect(table, runtime, kNeeds) ? 0 : -1;
}
