// Tensor fusion planning: merges ready allreduce responses that can share one
// collective (same dtype, device, reduce op and scale factors) into one
// response naming several tensors, up to the fusion threshold in bytes.
// Deterministic: every rank plans the same fusion from the same input.
#pragma once

#include <cstdint>
#include <vector>

#include "common/message.h"

namespace hvda {

// Bytes of the tensors of r (for allreduce-like responses).
int64_t ResponseBytes(const Response& r);

// Sets *out to copies of the responses `in` points to, fused: a group's first
// member is copied whole, the others add their names and shapes to it (so a
// fused single-tensor response costs a copy of its name and shape only).
// threshold_bytes <= 0 disables fusion. Relative order of the first member
// of each group is kept. `in` is borrowed.
void FuseResponses(const std::vector<const Response*>& in, int64_t threshold_bytes,
                   std::vector<Response>* out);

}  // namespace hvda
