// HOROVOD_THREAD_AFFINITY: pins the background thread of local rank i to the
// i-th core of a comma-separated list (upstream's semantics).
#pragma once

#include <string>
#include <thread>

#include "common/util/status.h"

namespace hvda {

// The core for `local_rank` from `spec` ("0,2,4,6"), or -1 when spec is
// empty. InvalidArgument (naming the variable) when an entry is not a
// non-negative integer or the list has no entry for local_rank.
Status AffinityCoreFor(const std::string& spec, int local_rank, int* core);

// Pins `thread` to `core`. Non-blocking; fails if the core is not usable by
// this process (e.g. outside its cpuset).
Status PinThread(std::thread& thread, int core);

}  // namespace hvda
