// The link from the TensorFlow op library to the horovod_accel core: the
// core's C API table and runtime (csrc/include/horovod_accel/core_api.h),
// set once by Python (horovod_accel/tensorflow/mpi_ops.py) through the
// exported hvda_tf_set_core_api() right after tf.load_op_library.
#pragma once

#include <string>

#include "horovod_accel/core_api.h"

namespace hvda_tf {

// The table and runtime, or null before hvda_tf_set_core_api(). Both live
// for the rest of the process once set.
const hvda_core_api_v1* CoreApi();
hvda_core_runtime* CoreRuntime();

// "" when the link is set; otherwise what to do (for an op's error).
std::string LinkError();

}  // namespace hvda_tf

// Exported (the only exported symbol besides TF's registrations): stores the
// table and runtime addresses of `_core.Runtime.c_api()`. Returns 0, or -1
// when the table's major version differs from the one this library was built
// with or the table is too short. Called from Python with ctypes; may be
// called again (the same values) after re-importing.
extern "C" __attribute__((visibility("default"))) int hvda_tf_set_core_api(uintptr_t table,
                                                                          uintptr_t runtime);
