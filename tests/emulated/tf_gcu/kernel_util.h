// What the GCU compute kernels share: owning TF tensor handles, failing a
// kernel, and launching device compute on the kernel's stream.
//
// NOTE [Device compute]: a kernel's compute function runs on a TF thread,
// reads shapes only (host metadata), allocates its outputs with
// TF_AllocateOutput and enqueues the arithmetic on the kernel's stream
// (TF_GetStream -> SP_Stream -> topsStream_t) with hvda_emu::RtLaunchKernel,
// which hands the arithmetic the device buffers' shadows on the stream's
// worker. The host never touches device memory, and the arithmetic runs in
// stream order with the copies TF enqueues, as on a real device. TF may free
// an input once compute returned: the emulated topsFree keeps it mapped until
// the queued arithmetic ran.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>

#include "tensorflow/c/kernels.h"

namespace hvda_tf_gcu {

// Owns one TF_Tensor handle (from TF_GetInput / TF_AllocateOutput).
class TensorRef {
 public:
  TensorRef() = default;
  ~TensorRef() {
    if (t_ != nullptr) TF_DeleteTensor(t_);
  }
  TensorRef(const TensorRef&) = delete;
  TensorRef& operator=(const TensorRef&) = delete;
  TF_Tensor** out() { return &t_; }
  void reset(TF_Tensor* t) {
    if (t_ != nullptr) TF_DeleteTensor(t_);
    t_ = t;
  }
  TF_Tensor* get() const { return t_; }

 private:
  TF_Tensor* t_ = nullptr;
};

// Marks the kernel failed with `code` and `message`.
void Fail(TF_OpKernelContext* ctx, TF_Code code, const std::string& message);

// True when the kernel may go on; otherwise fails the kernel with *status.
bool Check(TF_OpKernelContext* ctx, TF_Status* status);

// Enqueues kernel->Compute(shadows) on the kernel's stream, shadows[i]
// being tensors[i]'s device buffer (whole tensor; an empty tensor gets a
// null shadow). Takes the kernel object: it is deleted after it ran, or
// here if the launch fails (then the TF kernel is failed).
using KernelRun = void (*)(void* kernel, char* const* shadows);
void LaunchRaw(TF_OpKernelContext* ctx, KernelRun run, void* kernel, void (*destroy)(void*),
               std::initializer_list<const TF_Tensor*> tensors);

template <typename Kernel>
void Launch(TF_OpKernelContext* ctx, std::unique_ptr<Kernel> kernel,
            std::initializer_list<const TF_Tensor*> tensors) {
  LaunchRaw(
      ctx,
      [](void* k, char* const* shadows) {
        std::unique_ptr<Kernel> owned(static_cast<Kernel*>(k));
        owned->Compute(shadows);
      },
      kernel.release(), [](void* k) { delete static_cast<Kernel*>(k); }, tensors);
}

// Registers a float32 kernel for device "GCU": `type_attr` is constrained
// to float; `host_memory_arg`, when not null, is an argument kept in host
// memory (a resource handle). Failures are printed (kernels.cc).
void RegisterFloatKernel(const char* op, const char* type_attr, const char* host_memory_arg,
                         void* (*create)(TF_OpKernelConstruction*),
                         void (*compute)(void*, TF_OpKernelContext*), void (*destroy)(void*));
void RegisterMatMulKernel();      // matmul_kernel.cc
void RegisterBinaryKernels();     // binary_kernels.cc
void RegisterVariableKernels();   // variable_kernels.cc

}  // namespace hvda_tf_gcu
