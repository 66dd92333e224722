// stream_from_framework (plugin ABI 1.2) for CUDA-like vendors: maps a
// framework's stream object on this vendor's device to the native stream.
//
// NOTE [TensorFlow streams]: a TensorFlow kernel on a PluggableDevice gets
// its stream as an SP_Stream, a pointer to a struct that the vendor's TF
// plugin defines (SP_Stream_st). Only that plugin knows where the native
// stream sits in it, so the mapping is the TF plugin's to export: a C
// function `void* <symbol>(SP_Stream)` named in the vendor's VendorSpec
// (tf_stream_symbol; e.g. "hvda_tf_gcu_native_stream" for GCU), returning
// the runtime's stream (topsStream_t, ...). This plugin looks the symbol up
// among the libraries loaded in the process (TensorFlow loads its plugins
// with RTLD_LOCAL, so a global lookup alone would miss it) the first time a
// TF stream arrives, and keeps the function. A vendor whose TF plugin
// exports no such function gets HVDA_UNAVAILABLE naming what is missing:
// reading an unknown struct by guessing its layout would order collectives
// on the wrong stream, silently.
#pragma once

#include "horovod_accel/plugin.h"

namespace hvda {
namespace vendor {

// hvda_device_ops_v1.stream_from_framework.
hvda_status StreamFromFramework(int device, const char* framework, void* framework_stream,
                                void** native);

}  // namespace vendor
}  // namespace hvda
