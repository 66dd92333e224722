// The GCU's float32 element-wise AddV2, Sub and Mul with NumPy-style
// broadcasting (same shapes, a scalar operand, or dimensions of 1 that
// stretch). Shapes are resolved on the host; the arithmetic runs on the
// kernel's stream (NOTE [Device compute] in kernel_util.h).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernel_util.h"

namespace hvda_tf_gcu {
namespace {

enum class BinaryOp { kAdd, kSub, kMul };

std::vector<int64_t> Shape(const TF_Tensor* t) {
  std::vector<int64_t> dims(static_cast<size_t>(TF_NumDims(t)));
  for (size_t i = 0; i < dims.size(); ++i) dims[i] = TF_Dim(t, static_cast<int>(i));
  return dims;
}

std::string ShapeString(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// The arithmetic on the stream's worker; shadows = {x, y, z}. Element e of
// z (row-major over dims) reads x at the offset sum(index_d * x_strides[d]);
// a broadcast dimension has stride 0.
struct BinaryKernel {
  BinaryOp op;
  std::vector<int64_t> dims;  // z's shape
  std::vector<int64_t> x_strides, y_strides;
  int64_t count;  // z's elements (> 0)

  void Compute(char* const* shadows) const {
    const auto* x = reinterpret_cast<const float*>(shadows[0]);
    const auto* y = reinterpret_cast<const float*>(shadows[1]);
    auto* z = reinterpret_cast<float*>(shadows[2]);
    std::vector<int64_t> index(dims.size(), 0);
    int64_t xo = 0, yo = 0;
    for (int64_t e = 0; e < count; ++e) {
      const float a = x[xo], b = y[yo];
      z[e] = op == BinaryOp::kAdd ? a + b : op == BinaryOp::kSub ? a - b : a * b;
      // Advance the row-major index, keeping the operand offsets in step.
      for (size_t d = dims.size(); d-- > 0;) {
        xo += x_strides[d];
        yo += y_strides[d];
        if (++index[d] < dims[d]) break;
        xo -= x_strides[d] * dims[d];
        yo -= y_strides[d] * dims[d];
        index[d] = 0;
      }
    }
  }
};

// Row-major strides of `shape` aligned right to `rank` dimensions, 0 where
// the dimension is broadcast (absent or 1 while the result's is not).
std::vector<int64_t> Strides(const std::vector<int64_t>& shape, const std::vector<int64_t>& out) {
  const size_t rank = out.size();
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    const size_t d = rank - shape.size() + i;
    strides[d] = shape[i] == out[d] ? stride : 0;
    stride *= shape[i];
  }
  return strides;
}

template <BinaryOp kOp>
void Compute(void* /*kernel*/, TF_OpKernelContext* ctx) {
  TF_Status* status = TF_NewStatus();
  TensorRef x, y, z;
  TF_GetInput(ctx, 0, x.out(), status);
  if (TF_GetCode(status) == TF_OK) TF_GetInput(ctx, 1, y.out(), status);
  const bool inputs_ok = Check(ctx, status);
  TF_DeleteStatus(status);
  if (!inputs_ok) return;
  const std::vector<int64_t> xs = Shape(x.get()), ys = Shape(y.get());
  const size_t rank = std::max(xs.size(), ys.size());
  std::vector<int64_t> dims(rank);
  for (size_t d = 0; d < rank; ++d) {
    const size_t from_end = rank - d;
    const int64_t a = from_end <= xs.size() ? xs[xs.size() - from_end] : 1;
    const int64_t b = from_end <= ys.size() ? ys[ys.size() - from_end] : 1;
    if (a != b && a != 1 && b != 1) {
      Fail(ctx, TF_INVALID_ARGUMENT,
           "GCU element-wise op: incompatible shapes " + ShapeString(xs) + " and " +
               ShapeString(ys));
      return;
    }
    dims[d] = a == 1 ? b : a;
  }
  int64_t count = 1;
  for (int64_t n : dims) count *= n;
  status = TF_NewStatus();
  z.reset(TF_AllocateOutput(ctx, 0, TF_FLOAT, dims.data(), static_cast<int>(rank),
                            static_cast<size_t>(count) * sizeof(float), status));
  const bool output_ok = Check(ctx, status);
  TF_DeleteStatus(status);
  if (!output_ok || count == 0) return;
  auto kernel = std::make_unique<BinaryKernel>();
  kernel->op = kOp;
  kernel->x_strides = Strides(xs, dims);
  kernel->y_strides = Strides(ys, dims);
  kernel->dims = std::move(dims);
  kernel->count = count;
  Launch(ctx, std::move(kernel), {x.get(), y.get(), z.get()});
}

}  // namespace

void RegisterBinaryKernels() {
  RegisterFloatKernel("AddV2", "T", nullptr, nullptr, Compute<BinaryOp::kAdd>, nullptr);
  RegisterFloatKernel("Sub", "T", nullptr, nullptr, Compute<BinaryOp::kSub>, nullptr);
  RegisterFloatKernel("Mul", "T", nullptr, nullptr, Compute<BinaryOp::kMul>, nullptr);
}

}  // namespace hvda_tf_gcu
