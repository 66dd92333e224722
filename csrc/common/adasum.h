// Adasum (adaptive summation; upstream's `hvd.Adasum` reduce op), written once
// against plain host buffers. See docs/design/adasum.md.
//
// For two gradient vectors a and b:
//   adasum(a, b) = (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b
// where a side whose squared norm is 0 gets coefficient 1 (so adasum(a, 0) = a
// and adasum(0, 0) = 0, never NaN). Orthogonal vectors add; identical vectors
// give the vector itself. Dot products and norms accumulate in double, in
// index order; each output element is ca * a[i] + cb * b[i] evaluated in
// double and rounded once to the working type.
//
// The combination is per *tensor*: in a fused buffer each tensor (a segment
// of `counts[t]` consecutive elements) gets its own dot product and norms,
// exactly as if it had been reduced alone (upstream does the same).
//
// Across n ranks the combination is applied as a binary tree in rank order:
// level 1 combines (0,1), (2,3), ...; level 2 combines the results of (0,1)
// and (2,3), ...; for n a power of two this is upstream's tree. For other n
// a node without a partner at some level passes through unchanged to the
// next level (e.g. n = 3: adasum(adasum(g0, g1), g2)).
//
// Every function here is deterministic (no threads, fixed evaluation order),
// so every rank that runs it on the same gathered inputs gets bit-identical
// results. None of them blocks, allocates device memory or keeps state.
#pragma once

#include <cstdint>
#include <vector>

#include "common/dtype.h"
#include "common/util/status.h"

namespace hvda {

// float16, bfloat16, float32 and float64: the dtypes Adasum is defined for.
bool AdasumSupportsDtype(DataType dtype);

// In place a <- adasum(a, b), per segment: `counts` are the consecutive
// segment lengths (elements); a and b hold sum(counts) elements each and must
// not overlap. Zero-length segments are skipped.
void AdasumCombine(float* a, const float* b, const std::vector<int64_t>& counts);
void AdasumCombine(double* a, const double* b, const std::vector<int64_t>& counts);

// The tree combination of n >= 1 rank buffers.
// gathered: n consecutive buffers (rank order) of sum(counts) elements of
//   `dtype` each, host memory owned by the caller; used as scratch (its
//   contents are unspecified afterwards).
// out: host memory for sum(counts) elements of `dtype`; may alias the first
//   buffer of `gathered` but no other part of it.
// float16/bfloat16 are widened to float32 for the whole tree and rounded to
// the 16-bit type once at the end (allocates n * sum(counts) floats).
// Returns InvalidArgument for a dtype AdasumSupportsDtype rejects.
Status AdasumReduce(void* gathered, int n, const std::vector<int64_t>& counts, DataType dtype,
                    void* out);

}  // namespace hvda
