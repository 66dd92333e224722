#include "core_link.h"

#include <cstddef>
#include <cstdint>

#include "framework_core_link.h"

namespace hvda_tf {
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
  return "the horovod_accel TensorFlow op library is not connected to the core; import it "
         "through horovod_accel.tensorflow (or horovod.tensorflow), which does that, instead of "
         "calling tf.load_op_library on it directly.";
}

}  // namespace hvda_tf

extern "C" int hvda_tf_set_core_api(uintptr_t table, uintptr_t runtime) {
  // The kernels call entries up to process_set_size (core C API 1.0).
  constexpr size_t kNeeds = offsetof(hvda_core_api_v1, process_set_size) +
                            sizeof(hvda_core_api_v1::process_set_size);
  return hvda_tf::Link().Connect(table, runtime, kNeeds) ? 0 : -1;
}
