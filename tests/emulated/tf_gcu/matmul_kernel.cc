// The GCU's float32 MatMul: c[m, n] = op(a) @ op(b), op transposing when
// the attribute transpose_a / transpose_b says so. Shapes are checked on the
// host; the product runs on the kernel's stream (NOTE [Device compute] in
// kernel_util.h), accumulating in float in index order.
#include <cstdint>
#include <memory>
#include <string>

#include "kernel_util.h"

namespace hvda_tf_gcu {
namespace {

struct MatMulAttrs {
  bool transpose_a = false;
  bool transpose_b = false;
};

// The product on the stream's worker; shadows = {a, b, c}.
struct MatMulKernel {
  int64_t m, n, k;
  bool transpose_a, transpose_b;

  void Compute(char* const* shadows) const {
    const auto* a = reinterpret_cast<const float*>(shadows[0]);
    const auto* b = reinterpret_cast<const float*>(shadows[1]);
    auto* c = reinterpret_cast<float*>(shadows[2]);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        float sum = 0;
        for (int64_t p = 0; p < k; ++p) {
          const float x = transpose_a ? a[p * m + i] : a[i * k + p];
          const float y = transpose_b ? b[j * k + p] : b[p * n + j];
          sum += x * y;
        }
        c[i * n + j] = sum;
      }
    }
  }
};

void* Create(TF_OpKernelConstruction* ctx) {
  auto attrs = std::make_unique<MatMulAttrs>();
  TF_Status* status = TF_NewStatus();
  TF_Bool value = 0;
  TF_OpKernelConstruction_GetAttrBool(ctx, "transpose_a", &value, status);
  attrs->transpose_a = value != 0;
  if (TF_GetCode(status) == TF_OK) {
    TF_OpKernelConstruction_GetAttrBool(ctx, "transpose_b", &value, status);
    attrs->transpose_b = value != 0;
  }
  if (TF_GetCode(status) != TF_OK) TF_OpKernelConstruction_Failure(ctx, status);
  TF_DeleteStatus(status);
  return attrs.release();
}

void Delete(void* attrs) { delete static_cast<MatMulAttrs*>(attrs); }

void Compute(void* kernel_attrs, TF_OpKernelContext* ctx) {
  const auto* attrs = static_cast<const MatMulAttrs*>(kernel_attrs);
  TF_Status* status = TF_NewStatus();
  TensorRef a, b, c;
  TF_GetInput(ctx, 0, a.out(), status);
  if (TF_GetCode(status) == TF_OK) TF_GetInput(ctx, 1, b.out(), status);
  const bool inputs_ok = Check(ctx, status);
  TF_DeleteStatus(status);
  if (!inputs_ok) return;
  if (TF_NumDims(a.get()) != 2 || TF_NumDims(b.get()) != 2) {
    Fail(ctx, TF_INVALID_ARGUMENT, "GCU MatMul: both operands must be matrices");
    return;
  }
  auto kernel = std::make_unique<MatMulKernel>();
  kernel->transpose_a = attrs->transpose_a;
  kernel->transpose_b = attrs->transpose_b;
  kernel->m = TF_Dim(a.get(), attrs->transpose_a ? 1 : 0);
  kernel->k = TF_Dim(a.get(), attrs->transpose_a ? 0 : 1);
  const int64_t k_b = TF_Dim(b.get(), attrs->transpose_b ? 1 : 0);
  kernel->n = TF_Dim(b.get(), attrs->transpose_b ? 0 : 1);
  if (kernel->k != k_b) {
    Fail(ctx, TF_INVALID_ARGUMENT,
         "GCU MatMul: inner dimensions differ: " + std::to_string(kernel->k) + " vs " +
             std::to_string(k_b));
    return;
  }
  const int64_t dims[2] = {kernel->m, kernel->n};
  const size_t bytes = static_cast<size_t>(kernel->m * kernel->n) * sizeof(float);
  status = TF_NewStatus();
  c.reset(TF_AllocateOutput(ctx, 0, TF_FLOAT, dims, 2, bytes, status));
  const bool output_ok = Check(ctx, status);
  TF_DeleteStatus(status);
  if (!output_ok || bytes == 0) return;  // an empty product has nothing to compute
  Launch(ctx, std::move(kernel), {a.get(), b.get(), c.get()});
}

}  // namespace

void RegisterMatMulKernel() { RegisterFloatKernel("MatMul", "T", nullptr, Create, Compute, Delete); }

}  // namespace hvda_tf_gcu
