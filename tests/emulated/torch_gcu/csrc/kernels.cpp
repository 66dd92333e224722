// ATen kernels of the test-only device ('gcu' or 'emucuda', PrivateUse1).
//
// Only what must know where the data lives is implemented here: allocation,
// copies (all through topsMemcpy / cudaMemcpy), metadata-only views,
// resize_/set_ and _local_scalar_dense. Every other operator runs through
// torch's boxed CPU fallback, which copies the operands to the CPU, runs the
// CPU kernel and copies the results back (again through _copy_from). The host
// never reads or writes device memory directly.
#include "gcu.h"

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace hvda_gcu {
namespace {

using at::Tensor;
constexpr auto kGcu = c10::DeviceType::PrivateUse1;

bool on_gcu(const Tensor& t) { return t.device().type() == kGcu; }

// Elements of storage a strided view covers, from its first element.
int64_t span_elems(const Tensor& t) {
  int64_t last = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) == 0) return 0;
    TORCH_CHECK(t.stride(d) >= 0, device_name(), ": negative strides are not supported");
    last += (t.size(d) - 1) * t.stride(d);
  }
  return last + 1;
}

// The logical values of a device tensor as a new contiguous CPU tensor (same
// dtype and sizes). A non-contiguous view is fetched as the storage span it
// covers and gathered on the host.
Tensor device_to_cpu(const Tensor& src) {
  const auto cpu_opts = src.options().device(at::kCPU);
  Tensor out = at::empty(src.sizes(), cpu_opts);
  if (src.numel() == 0) return out;
  c10::DeviceGuard guard(src.device());
  const int64_t item = src.element_size();
  if (src.is_contiguous()) {
    hvda_gcu::memcpy(out.data_ptr(), src.const_data_ptr(), src.numel() * item, kD2H);
  } else {
    const int64_t span = span_elems(src);
    Tensor buf = at::empty({span}, cpu_opts);
    hvda_gcu::memcpy(buf.data_ptr(), src.const_data_ptr(), span * item, kD2H);
    out.copy_(buf.as_strided(src.sizes(), src.strides(), 0));
  }
  // Lazy conjugate/negative bits describe the view, not the stored values.
  if (src.is_conj()) out = out.conj_physical();
  if (src.is_neg()) out = out.neg();
  return out;
}

// Stores `values` (a CPU tensor of dst's dtype and sizes) into the device
// tensor dst. A non-contiguous destination is written as the storage span it
// covers; unless the view is dense, the span is read first so the gaps keep
// their values.
void cpu_to_device(Tensor values, const Tensor& dst) {
  if (dst.numel() == 0) return;
  values = values.resolve_conj().resolve_neg();
  if (dst.is_conj()) values = values.conj_physical();
  if (dst.is_neg()) values = values.neg();
  values = values.contiguous();
  c10::DeviceGuard guard(dst.device());
  const int64_t item = dst.element_size();
  if (dst.is_contiguous()) {
    hvda_gcu::memcpy(dst.data_ptr(), values.const_data_ptr(), dst.numel() * item, kH2D);
    return;
  }
  const int64_t span = span_elems(dst);
  Tensor buf = at::empty({span}, values.options());
  if (!dst.is_non_overlapping_and_dense()) {
    hvda_gcu::memcpy(buf.data_ptr(), dst.const_data_ptr(), span * item, kD2H);
  }
  buf.as_strided(dst.sizes(), dst.strides(), 0).copy_(values);
  hvda_gcu::memcpy(dst.data_ptr(), buf.const_data_ptr(), span * item, kH2D);
}

bool plain_bits(const Tensor& t) { return !t.is_conj() && !t.is_neg(); }

// ---- factories -------------------------------------------------------------

void check_factory_args(c10::Device device, std::optional<c10::Layout> layout,
                        std::optional<bool> pin_memory) {
  TORCH_CHECK(device.type() == kGcu, device_name(), ": factory called for device ", device);
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided,
              device_name(), ": only strided tensors are supported");
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory),
              device_name(), ": only CPU tensors can be pinned");
}

Tensor gcu_empty(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                 std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                 std::optional<bool> pin_memory, std::optional<c10::MemoryFormat> memory_format) {
  const c10::Device dev = c10::device_or_default(device);
  check_factory_args(dev, layout, pin_memory);
  c10::DeviceGuard guard(dev);
  return at::detail::empty_generic(size, at::GetAllocator(kGcu),
                                   c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                   c10::dtype_or_default(dtype), memory_format);
}

Tensor gcu_empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<c10::ScalarType> dtype, std::optional<c10::Layout> layout,
                         std::optional<c10::Device> device, std::optional<bool> pin_memory) {
  const c10::Device dev = c10::device_or_default(device);
  check_factory_args(dev, layout, pin_memory);
  c10::DeviceGuard guard(dev);
  return at::detail::empty_strided_generic(size, stride, at::GetAllocator(kGcu),
                                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                           c10::dtype_or_default(dtype));
}

// ---- copies ----------------------------------------------------------------

// self -> dst, where one or both live on the device. Handles dtype conversion,
// broadcasting and arbitrary strides on either side.
Tensor gcu_copy_from(const Tensor& self, const Tensor& dst, bool /*non_blocking*/) {
  TORCH_CHECK(self.defined() && dst.defined(), device_name(),
              ": _copy_from with an undefined tensor");
  const bool src_dev = on_gcu(self);
  const bool dst_dev = on_gcu(dst);
  TORCH_CHECK((src_dev || self.is_cpu()) && (dst_dev || dst.is_cpu()),
              device_name(), ": copies between ", self.device(), " and ", dst.device(),
              " are not supported");
  if (dst.numel() == 0) return dst;

  // Same dtype and shape, both contiguous: a single runtime memcpy.
  if (self.scalar_type() == dst.scalar_type() && self.sizes().equals(dst.sizes()) &&
      self.is_contiguous() && dst.is_contiguous() && plain_bits(self) && plain_bits(dst)) {
    const int64_t n = dst.numel() * dst.element_size();
    const MemcpyKind kind = src_dev ? (dst_dev ? kD2D : kD2H) : kH2D;
    c10::DeviceGuard guard(dst_dev ? dst.device() : self.device());
    hvda_gcu::memcpy(dst.data_ptr(), self.const_data_ptr(), n, kind);
    return dst;
  }

  Tensor src_cpu = src_dev ? device_to_cpu(self) : self;
  if (!dst_dev) {
    dst.copy_(src_cpu);
    return dst;
  }
  Tensor staged = src_cpu.to(dst.scalar_type()).expand(dst.sizes());
  cpu_to_device(staged, dst);
  return dst;
}

Tensor gcu_copy_from_and_resize(const Tensor& self, const Tensor& dst) {
  dst.resize_(self.sizes());
  return gcu_copy_from(self, dst, false);
}

at::Scalar gcu_local_scalar_dense(const Tensor& self) {
  return at::_local_scalar_dense(device_to_cpu(self));
}

// ---- views (metadata only; the CPU implementations never touch the data) ---

Tensor gcu_as_strided(const Tensor& self, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                      std::optional<c10::SymInt> storage_offset) {
  std::optional<int64_t> offset;
  if (storage_offset) offset = storage_offset->expect_int();
  return at::native::as_strided_tensorimpl(self, C10_AS_INTARRAYREF_SLOW(size),
                                           C10_AS_INTARRAYREF_SLOW(stride), offset);
}

Tensor gcu_view(const Tensor& self, c10::SymIntArrayRef size) {
  return at::native::view(self, C10_AS_INTARRAYREF_SLOW(size));
}

Tensor gcu_reshape_alias(const Tensor& self, c10::SymIntArrayRef size,
                         c10::SymIntArrayRef stride) {
  return at::native::_reshape_alias(self, C10_AS_INTARRAYREF_SLOW(size),
                                    C10_AS_INTARRAYREF_SLOW(stride));
}

Tensor gcu_unfold(const Tensor& self, int64_t dimension, int64_t size, int64_t step) {
  return at::native::unfold(self, dimension, size, step);
}

Tensor gcu_view_as_real(const Tensor& self) { return at::native::view_as_real(self); }

Tensor gcu_view_as_complex(const Tensor& self) { return at::native::view_as_complex(self); }

// ---- resize_ / set_ (storage growth through a device-to-device copy) -------

void maybe_resize_storage(c10::TensorImpl* impl, std::size_t nbytes) {
  if (impl->numel() == 0) return;
  const c10::Storage& storage = impl->unsafe_storage();
  if (!storage) {
    impl->set_storage_keep_dtype(c10::make_intrusive<c10::StorageImpl>(
        c10::StorageImpl::use_byte_size_t(), nbytes, at::GetAllocator(kGcu), true));
  } else if (nbytes > storage.nbytes()) {
    resize_storage_bytes(storage.unsafeGetStorageImpl(), nbytes);
  }
}

const Tensor& gcu_resize_(const Tensor& self, c10::SymIntArrayRef size_sym,
                          std::optional<c10::MemoryFormat> memory_format) {
  const c10::IntArrayRef size = C10_AS_INTARRAYREF_SLOW(size_sym);
  c10::TensorImpl* impl = self.unsafeGetTensorImpl();
  if (impl->sizes() != size) {
    impl->set_sizes_contiguous(size);
    maybe_resize_storage(impl, at::detail::computeStorageNbytesContiguous(
                                   size, self.dtype().itemsize(), impl->storage_offset()));
  }
  if (memory_format) {
    TORCH_CHECK(*memory_format != c10::MemoryFormat::Preserve, "Unsupported memory format ",
                *memory_format);
    impl->empty_tensor_restride(*memory_format);
  }
  return self;
}

Tensor& gcu_set_storage_(Tensor& self, c10::Storage source, int64_t storage_offset,
                         c10::IntArrayRef size, c10::IntArrayRef stride) {
  at::native::checkSetStorage(self, source, storage_offset, size, stride);
  c10::TensorImpl* impl = self.unsafeGetTensorImpl();
  impl->set_storage_offset(storage_offset);
  const auto itemsize = self.dtype().itemsize();
  std::size_t nbytes = 0;
  if (stride.data() != nullptr) {
    impl->set_sizes_and_strides(size, stride);
    nbytes = at::detail::computeStorageNbytes(size, stride, itemsize, storage_offset);
  } else {
    impl->set_sizes_contiguous(size);
    nbytes = at::detail::computeStorageNbytesContiguous(size, itemsize, storage_offset);
  }
  maybe_resize_storage(impl, nbytes);
  return self;
}

Tensor& gcu_set_source_storage_(Tensor& self, c10::Storage source) {
  return at::native::set_(self, source);
}

Tensor& gcu_set_source_tensor_(Tensor& self, const Tensor& source) {
  return at::native::set_tensor_(self, source);
}

Tensor& gcu_set_empty_(Tensor& self) {
  c10::DeviceGuard guard(self.device());
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, at::GetAllocator(kGcu), true);
  return self.set_(storage, 0, {0}, {});
}

// ---- fused RNN cells --------------------------------------------------------
// For every device but the CPU, LSTM/GRU layers call these fused kernels
// (CUDA has them); they are computed on the CPU here. The workspace layouts
// are this file's own: LSTM [i, f, g, o] (activated gates), GRU
// [r, z, n, hx, hn].

Tensor to_cpu(const Tensor& t) { return t.defined() ? t.to(at::kCPU) : t; }
Tensor to_dev(const Tensor& t, c10::Device d) { return t.defined() ? t.to(d) : t; }

std::tuple<Tensor, Tensor, Tensor> gcu_fused_lstm_cell(
    const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& cx_,
    const std::optional<Tensor>& input_bias, const std::optional<Tensor>& hidden_bias) {
  const c10::Device dev = input_gates.device();
  Tensor gates = to_cpu(input_gates) + to_cpu(hidden_gates);
  if (input_bias && input_bias->defined()) gates = gates + to_cpu(*input_bias);
  if (hidden_bias && hidden_bias->defined()) gates = gates + to_cpu(*hidden_bias);
  const Tensor cx = to_cpu(cx_);
  const auto ch = gates.chunk(4, 1);
  const Tensor i = ch[0].sigmoid(), f = ch[1].sigmoid(), g = ch[2].tanh(), o = ch[3].sigmoid();
  const Tensor cy = f * cx + i * g;
  const Tensor hy = o * cy.tanh();
  return {hy.to(dev), cy.to(dev), at::cat({i, f, g, o}, 1).to(dev)};
}

std::tuple<Tensor, Tensor, Tensor> gcu_fused_lstm_cell_backward_impl(
    const std::optional<Tensor>& grad_hy_, const std::optional<Tensor>& grad_cy_,
    const Tensor& cx_, const Tensor& cy_, const Tensor& workspace, bool has_bias) {
  const Tensor grad_hy = grad_hy_ ? to_cpu(*grad_hy_) : Tensor();
  const Tensor grad_cy = grad_cy_ ? to_cpu(*grad_cy_) : Tensor();
  if (!grad_hy.defined() && !grad_cy.defined()) return {Tensor(), Tensor(), Tensor()};
  const c10::Device dev = workspace.device();
  const Tensor cx = to_cpu(cx_), cy = to_cpu(cy_);
  const auto ws = to_cpu(workspace).chunk(4, 1);
  const Tensor &i = ws[0], &f = ws[1], &g = ws[2], &o = ws[3];
  const Tensor tcy = cy.tanh();
  Tensor gcy = grad_hy.defined() ? grad_hy * o * (1 - tcy * tcy) : at::zeros_like(cy);
  if (grad_cy.defined()) gcy = gcy + grad_cy;
  const Tensor go = grad_hy.defined() ? grad_hy * tcy : at::zeros_like(o);
  const Tensor grad_gates = at::cat({gcy * g * i * (1 - i), gcy * cx * f * (1 - f),
                                     gcy * i * (1 - g * g), go * o * (1 - o)}, 1);
  const Tensor grad_bias = has_bias ? grad_gates.sum(0) : Tensor();
  return {grad_gates.to(dev), (gcy * f).to(dev), to_dev(grad_bias, dev)};
}

std::tuple<Tensor, Tensor> gcu_fused_gru_cell(
    const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& hx_,
    const std::optional<Tensor>& input_bias, const std::optional<Tensor>& hidden_bias) {
  const c10::Device dev = input_gates.device();
  Tensor ig = to_cpu(input_gates), hg = to_cpu(hidden_gates);
  if (input_bias && input_bias->defined()) ig = ig + to_cpu(*input_bias);
  if (hidden_bias && hidden_bias->defined()) hg = hg + to_cpu(*hidden_bias);
  const Tensor hx = to_cpu(hx_);
  const auto ic = ig.chunk(3, 1);
  const auto hc = hg.chunk(3, 1);
  const Tensor r = (ic[0] + hc[0]).sigmoid();
  const Tensor z = (ic[1] + hc[1]).sigmoid();
  const Tensor& hn = hc[2];
  const Tensor n = (ic[2] + r * hn).tanh();
  const Tensor hy = n + z * (hx - n);
  return {hy.to(dev), at::cat({r, z, n, hx, hn}, 1).to(dev)};
}

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> gcu_fused_gru_cell_backward(
    const Tensor& grad_hy_, const Tensor& workspace, bool has_bias) {
  const c10::Device dev = workspace.device();
  const Tensor grad_hy = to_cpu(grad_hy_);
  const auto ws = to_cpu(workspace).chunk(5, 1);
  const Tensor &r = ws[0], &z = ws[1], &n = ws[2], &hx = ws[3], &hn = ws[4];
  const Tensor gz = grad_hy * (hx - n) * (1 - z) * z;
  const Tensor gin = grad_hy * (1 - z) * (1 - n * n);
  const Tensor gr = gin * hn * (1 - r) * r;
  const Tensor grad_ig = at::cat({gr, gz, gin}, 1);
  const Tensor grad_hg = at::cat({gr, gz, gin * r}, 1);
  const Tensor grad_hx = grad_hy * z;
  return {grad_ig.to(dev), grad_hg.to(dev), grad_hx.to(dev),
          has_bias ? grad_ig.sum(0).to(dev) : Tensor(),
          has_bias ? grad_hg.sum(0).to(dev) : Tensor()};
}

// One stream per device: nothing to record.
void gcu_record_stream(Tensor& /*self*/, c10::Stream /*s*/) {}

// ---- everything else -------------------------------------------------------

void gcu_cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  // error_on_views: a view computed on a CPU copy would not alias the device
  // tensor; the view operators that need a kernel are registered above.
  at::native::cpu_fallback(op, stack, /*error_on_views=*/true);
}

} // namespace
} // namespace hvda_gcu

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using namespace hvda_gcu;
  m.impl("empty.memory_format", gcu_empty);
  m.impl("empty_strided", gcu_empty_strided);
  m.impl("_copy_from", gcu_copy_from);
  m.impl("_copy_from_and_resize", gcu_copy_from_and_resize);
  m.impl("_local_scalar_dense", gcu_local_scalar_dense);
  m.impl("as_strided", gcu_as_strided);
  m.impl("view", gcu_view);
  m.impl("_reshape_alias", gcu_reshape_alias);
  m.impl("unfold", gcu_unfold);
  m.impl("view_as_real", gcu_view_as_real);
  m.impl("view_as_complex", gcu_view_as_complex);
  m.impl("resize_", gcu_resize_);
  m.impl("set_.source_Storage_storage_offset", gcu_set_storage_);
  m.impl("set_.source_Storage", gcu_set_source_storage_);
  m.impl("set_.source_Tensor", gcu_set_source_tensor_);
  m.impl("set_", gcu_set_empty_);
  m.impl("record_stream", gcu_record_stream);
  m.impl("_thnn_fused_lstm_cell", gcu_fused_lstm_cell);
  m.impl("_thnn_fused_lstm_cell_backward_impl", gcu_fused_lstm_cell_backward_impl);
  m.impl("_thnn_fused_gru_cell", gcu_fused_gru_cell);
  m.impl("_thnn_fused_gru_cell_backward", gcu_fused_gru_cell_backward);
  // These have a CompositeExplicitAutogradNonFunctional kernel that would
  // call the out= variant (through the fallback) with a wrongly shaped
  // output (a deprecation warning); run them on the CPU as a whole instead.
  const auto fallback = [] {
    return torch::CppFunction::makeFromBoxedFunction<&hvda_gcu::gcu_cpu_fallback>();
  };
  m.impl("mse_loss", fallback());
  m.impl("smooth_l1_loss", fallback());
  // For other devices these reach *_overrideable stubs; run the CPU ones.
  m.impl("convolution", fallback());
  m.impl("convolution_backward", fallback());
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&hvda_gcu::gcu_cpu_fallback>());
}

// The conjugate/negative-bit fallbacks would materialize a lazily conjugated
// (negated) source of _copy_from through clone -> copy_ -> _copy_from, which
// recurses forever for a device copied via _copy_from. Let the flags through:
// gcu_copy_from resolves them itself. (_copy_from is used only by devices
// that, like this one, have no native copy_.)
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
