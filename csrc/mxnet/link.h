// The library's two links, set once by hvda_mx_bind: MXNet's C API
// functions (addresses from the libmxnet.so Python imported) and the
// horovod_accel core's C API table and runtime (core_api.h). All three live
// for the rest of the process once set.
#pragma once

#include <cstdint>
#include <string>

#include "horovod_accel/core_api.h"
#include "mx_abi.h"

namespace hvda_mx {

// Null before hvda_mx_bind() succeeded.
const MxFunctions* Mx();
const hvda_core_api_v1* CoreApi();
hvda_core_runtime* CoreRuntime();

// Stores the links; false with *error set when an address is missing or the
// core table is of another major version.
bool Bind(const hvda_core_api_v1* api, hvda_core_runtime* runtime, const MxFunctions& mx,
          std::string* error);

// MXGetLastError() as a string ("" before binding).
std::string MxLastError();

// The number of hvd.shutdown()s this process has seen (Python calls
// EndEpoch() after each). An op pushed in one epoch and run by the engine
// in a later one belongs to an ended job and must not reach the next.
uint64_t Epoch();
void EndEpoch();

}  // namespace hvda_mx
