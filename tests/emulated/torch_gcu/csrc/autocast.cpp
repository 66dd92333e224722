// torch.autocast('gcu'): the AutocastPrivateUse1 op lists, following the
// policies torch uses for its own devices (ATen/autocast_mode.h). Ops not
// listed run unchanged.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace {

using at::Tensor;
using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;

#define HVDA_LOWER(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define HVDA_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define HVDA_FP32_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define HVDA_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  AT_FORALL_LOWER_PRECISION_FP(HVDA_LOWER)
  AT_FORALL_FP32(HVDA_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(HVDA_FP32_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(HVDA_PROMOTE)
}

} // namespace
