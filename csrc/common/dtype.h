// Element types and reduction operators shared by every layer.
// The integer values are part of the Python binding contract; never renumber.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hvda {

enum class DataType : int32_t {
  kUInt8 = 0,
  kInt8 = 1,
  kInt16 = 2,
  kInt32 = 3,
  kInt64 = 4,
  kFloat16 = 5,
  kBFloat16 = 6,
  kFloat32 = 7,
  kFloat64 = 8,
  kBool = 9,
  kUInt16 = 10,  // appended (upstream's TF ops accept it); values are never renumbered
};
constexpr int kNumDataTypes = 11;

// Upstream Horovod's numbering (common/message.h): Average=0, Sum=1, Adasum=2, Min=3, Max=4, Product=5.
enum class ReduceOp : int32_t {
  kAverage = 0,
  kSum = 1,
  kAdasum = 2,
  kMin = 3,
  kMax = 4,
  kProduct = 5,
};

inline size_t DataTypeSize(DataType t) {
  switch (t) {
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kBool: return 1;
    case DataType::kInt16:
    case DataType::kUInt16:
    case DataType::kFloat16:
    case DataType::kBFloat16: return 2;
    case DataType::kInt32:
    case DataType::kFloat32: return 4;
    case DataType::kInt64:
    case DataType::kFloat64: return 8;
  }
  return 0;
}

inline const char* DataTypeName(DataType t) {
  switch (t) {
    case DataType::kUInt8: return "uint8";
    case DataType::kInt8: return "int8";
    case DataType::kInt16: return "int16";
    case DataType::kUInt16: return "uint16";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kFloat16: return "float16";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kFloat32: return "float32";
    case DataType::kFloat64: return "float64";
    case DataType::kBool: return "bool";
  }
  return "unknown";
}

inline bool IsValidDataType(int32_t v) { return v >= 0 && v < kNumDataTypes; }

// NOTE [Scaling contract]: a prescale or postscale factor the user gave (or
// a postscale combined with Average's 1/N) is rounded to the element's
// compute type before the data is scaled, as upstream Horovod's ScaleBuffer
// does (upstream's own tests check that bit for bit at up to 3 ranks):
// float for float32, float16 and bfloat16, double for float64 and integers.
// Average's 1/N alone stays a double: the host kernels then round the
// double product once, which is x / N correctly rounded, and equals
// upstream's result whenever 1/N is a float (N a power of two).
inline double RoundScaleFactor(DataType t, double factor) {
  const bool in_float = t == DataType::kFloat32 || t == DataType::kFloat16 ||
                        t == DataType::kBFloat16;
  return in_float ? static_cast<double>(static_cast<float>(factor)) : factor;
}

// The factor an Average/Sum result is multiplied by after the reduction:
// postscale, times 1/N for Average over N ranks (NOTE [Scaling contract]).
inline double PostScaleFactor(DataType t, double postscale, bool average, int n) {
  if (postscale == 1.0) return average ? 1.0 / n : 1.0;
  return RoundScaleFactor(t, postscale * (average ? 1.0 / n : 1.0));
}

inline const char* ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kAverage: return "Average";
    case ReduceOp::kSum: return "Sum";
    case ReduceOp::kAdasum: return "Adasum";
    case ReduceOp::kMin: return "Min";
    case ReduceOp::kMax: return "Max";
    case ReduceOp::kProduct: return "Product";
  }
  return "unknown";
}

}  // namespace hvda
