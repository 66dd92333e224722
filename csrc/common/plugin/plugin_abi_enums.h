// The core's enums as the plugin ABI's values. The core passes DataType and
// ReduceOp to a plugin by value: plugin.h's numbering (a frozen ABI) and
// dtype.h's must agree entry by entry, which the static_asserts below check
// at compile time.
#pragma once

#include <cstdint>
#include <iterator>

#include "common/dtype.h"
#include "horovod_accel/plugin.h"

namespace hvda {
namespace abi_numbering {

constexpr int32_t kAbiDataTypes[] = {HVDA_UINT8,    HVDA_INT8,    HVDA_INT16,   HVDA_INT32,
                                     HVDA_INT64,    HVDA_FLOAT16, HVDA_BFLOAT16, HVDA_FLOAT32,
                                     HVDA_FLOAT64,  HVDA_BOOL,    HVDA_UINT16};
constexpr DataType kCoreDataTypes[] = {
    DataType::kUInt8,   DataType::kInt8,    DataType::kInt16,    DataType::kInt32,
    DataType::kInt64,   DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
    DataType::kFloat64, DataType::kBool,    DataType::kUInt16};
constexpr int32_t kAbiReduceOps[] = {HVDA_AVERAGE, HVDA_SUM, HVDA_ADASUM,
                                     HVDA_MIN,     HVDA_MAX, HVDA_PRODUCT};
constexpr ReduceOp kCoreReduceOps[] = {ReduceOp::kAverage, ReduceOp::kSum, ReduceOp::kAdasum,
                                       ReduceOp::kMin,     ReduceOp::kMax, ReduceOp::kProduct};

template <typename Core, size_t N>
constexpr bool SameNumbering(const int32_t (&abi)[N], const Core (&core)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (abi[i] != static_cast<int32_t>(core[i])) return false;
  return true;
}

static_assert(std::size(kCoreDataTypes) == kNumDataTypes,
              "a new DataType needs its hvda_dtype in plugin.h and an entry here");
static_assert(SameNumbering(kAbiDataTypes, kCoreDataTypes), "plugin.h dtype numbering");
static_assert(SameNumbering(kAbiReduceOps, kCoreReduceOps), "plugin.h reduce-op numbering");

}  // namespace abi_numbering

inline hvda_dtype AbiDataType(DataType dtype) {
  return static_cast<hvda_dtype>(static_cast<int32_t>(dtype));
}
inline hvda_reduce_op AbiReduceOp(ReduceOp op) {
  return static_cast<hvda_reduce_op>(static_cast<int32_t>(op));
}

}  // namespace hvda
