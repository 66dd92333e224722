// Link-time stand-in for TensorFlow's libtensorflow_framework.so.2, built
// from our own declarations (tf_c_api_list.h) with that soname, as CUDA's
// stub libraries are: libhvda_tf_ops.so links against it with
// -Wl,--no-undefined, which gives it DT_NEEDED libtensorflow_framework.so.2
// and unversioned references to the TF_* functions. It is never installed
// nor shipped: at run time the dynamic loader matches that DT_NEEDED to the
// libtensorflow_framework.so.2 TensorFlow has already loaded (by soname),
// and the references bind there (docs/design/tensorflow.md).
//
// The definitions carry no symbol version, like TensorFlow's own exports
// (`nm -D --with-symbol-versions` on 2.21 shows none). Should the stub ever
// be loaded instead of TensorFlow, every function aborts with a message.
#include <cstdio>
#include <cstdlib>

#include "tf_c_api.h"

namespace {

[[noreturn]] void NotTensorFlow(const char* name) {
  std::fprintf(stderr,
               "horovod_accel: %s was called in the build-time stub of "
               "libtensorflow_framework.so.2; load the op library through TensorFlow "
               "(tf.load_op_library) so it binds to TensorFlow's own library\n",
               name);
  std::abort();
}

}  // namespace

#define HVDA_TF_STUB(ret, name, params) \
  extern "C" __attribute__((visibility("default"))) ret name params { NotTensorFlow(#name); }
HVDA_TF_C_FUNCTIONS(HVDA_TF_STUB)
HVDA_TF_C_DEVICE_FUNCTIONS(HVDA_TF_STUB)
