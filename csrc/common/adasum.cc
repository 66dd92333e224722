#include "common/adasum.h"

#include <cstring>
#include <numeric>

#include "kernels/half.h"

namespace hvda {
namespace {

template <typename T>
void CombineSegment(T* a, const T* b, int64_t n) {
  double dot = 0.0, aa = 0.0, bb = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = a[i], y = b[i];
    dot += x * y;
    aa += x * x;
    bb += y * y;
  }
  const double ca = aa != 0.0 ? 1.0 - dot / (2.0 * aa) : 1.0;
  const double cb = bb != 0.0 ? 1.0 - dot / (2.0 * bb) : 1.0;
  for (int64_t i = 0; i < n; ++i)
    a[i] = static_cast<T>(ca * static_cast<double>(a[i]) + cb * static_cast<double>(b[i]));
}

template <typename T>
void Combine(T* a, const T* b, const std::vector<int64_t>& counts) {
  int64_t off = 0;
  for (int64_t c : counts) {
    if (c > 0) CombineSegment(a + off, b + off, c);
    off += c;
  }
}

// Tree over n buffers of `total` elements each, in place; result in buf[0].
template <typename T>
void Tree(T* buf, int n, int64_t total, const std::vector<int64_t>& counts) {
  for (int stride = 1; stride < n; stride *= 2)
    for (int i = 0; i + stride < n; i += 2 * stride)
      Combine(buf + static_cast<int64_t>(i) * total,
              buf + static_cast<int64_t>(i + stride) * total, counts);
}

}  // namespace

bool AdasumSupportsDtype(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16 ||
         dtype == DataType::kFloat32 || dtype == DataType::kFloat64;
}

void AdasumCombine(float* a, const float* b, const std::vector<int64_t>& counts) {
  Combine(a, b, counts);
}

void AdasumCombine(double* a, const double* b, const std::vector<int64_t>& counts) {
  Combine(a, b, counts);
}

Status AdasumReduce(void* gathered, int n, const std::vector<int64_t>& counts, DataType dtype,
                    void* out) {
  if (!AdasumSupportsDtype(dtype))
    return Status::InvalidArgument(std::string("Adasum is defined for float16, bfloat16, float32 "
                                               "and float64 tensors, not ") +
                                   DataTypeName(dtype) + ".");
  const int64_t total = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  if (n < 1 || total == 0) return Status::OK();
  const size_t bytes = static_cast<size_t>(total) * DataTypeSize(dtype);
  switch (dtype) {
    case DataType::kFloat32:
      Tree(static_cast<float*>(gathered), n, total, counts);
      break;
    case DataType::kFloat64:
      Tree(static_cast<double*>(gathered), n, total, counts);
      break;
    default: {  // float16 / bfloat16: widen once, round once.
      const bool half = dtype == DataType::kFloat16;
      std::vector<float> wide(static_cast<size_t>(n) * total);
      const uint16_t* src = static_cast<const uint16_t*>(gathered);
      if (half) HalfToFloatN(src, wide.data(), wide.size());
      else BFloat16ToFloatN(src, wide.data(), wide.size());
      Tree(wide.data(), n, total, counts);
      uint16_t* dst = static_cast<uint16_t*>(out);
      if (half) FloatToHalfN(wide.data(), dst, total);
      else FloatToBFloat16N(wide.data(), dst, total);
      return Status::OK();
    }
  }
  if (out != gathered) std::memcpy(out, gathered, bytes);
  return Status::OK();
}

}  // namespace hvda
