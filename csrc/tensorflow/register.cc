// Registers the Horovod ops and CPU kernels with TensorFlow when the library
// is loaded (tf.load_op_library runs static initializers and records the ops
// registered meanwhile, from which it builds the Python wrappers).
#include <cstdio>

#include "kernels.h"

namespace hvda_tf {
namespace {

struct Registrar {
  Registrar() {
    TF_Status* status = TF_NewStatus();
    RegisterOpDefs(status);
    RegisterInplaceKernels("CPU", status);
    RegisterGatherKernels("CPU", status);
    RegisterControlKernels(status);
    if (TF_GetCode(status) != TF_OK)
      std::fprintf(stderr, "horovod_accel: registering the TensorFlow ops failed: %s\n",
                   TF_Message(status));
    TF_DeleteStatus(status);
  }
};

const Registrar registrar;

}  // namespace
}  // namespace hvda_tf
