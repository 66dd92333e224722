#include "core_link.h"

#include <atomic>
#include <cstdint>

namespace hvda_tf {
namespace {

std::atomic<const hvda_core_api_v1*> g_api{nullptr};
std::atomic<hvda_core_runtime*> g_runtime{nullptr};

}  // namespace

const hvda_core_api_v1* CoreApi() { return g_api.load(std::memory_order_acquire); }
hvda_core_runtime* CoreRuntime() { return g_runtime.load(std::memory_order_acquire); }

std::string LinkError() {
  if (CoreApi() != nullptr && CoreRuntime() != nullptr) return "";
  return "the horovod_accel TensorFlow op library is not connected to the core; import it "
         "through horovod_accel.tensorflow (or horovod.tensorflow), which does that, instead of "
         "calling tf.load_op_library on it directly.";
}

}  // namespace hvda_tf

extern "C" int hvda_tf_set_core_api(uintptr_t table, uintptr_t runtime) {
  const auto* api = reinterpret_cast<const hvda_core_api_v1*>(table);
  if (api == nullptr || runtime == 0) return -1;
  if (api->major != HVDA_CORE_API_MAJOR) return -1;
  if (!HVDA_CORE_HAS_FIELD(api, hvda_core_api_v1, process_set_size)) return -1;
  hvda_tf::g_runtime.store(reinterpret_cast<hvda_core_runtime*>(runtime), std::memory_order_release);
  hvda_tf::g_api.store(api, std::memory_order_release);
  return 0;
}
