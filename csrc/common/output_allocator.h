// OutputAllocator: how a framework lends the core the buffer for a result
// whose size only negotiation decides (allgather, alltoall), so the
// collective writes the framework's tensor directly instead of a core buffer
// the adapter then copies.
//
// Contract: called at most once per op, on the core's executor thread, with
// the result's shape and byte size, before the collective runs; *data must
// then point to `bytes` bytes in the op's memory space (host memory for a
// host op, the op's device for an accelerator op) that stay valid until the
// op completes. A non-OK Status fails the op with that status.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "common/util/status.h"

namespace hvda {

using OutputAllocator =
    std::function<Status(const std::vector<int64_t>& shape, size_t bytes, void** data)>;

}  // namespace hvda
