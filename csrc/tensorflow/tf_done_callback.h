// TfDoneCallback: owns TensorFlow's `done` callback of one async kernel call,
// taken out of TF's own std::function<void()> (NOTE [Taking TF's done
// callback] in async_op.cc), without using this library's std::function.
//
// Why not std::function: TensorFlow is built with libstdc++, so the pointee
// is libstdc++'s std::function<void()>. This library may be built with
// another standard library (the release wheels link libc++ statically,
// packaging/toolchain/zig.cmake), whose std::function has another layout.
// So the move, the call and the destruction are done here on libstdc++'s
// layout, which is part of its stable ABI (unchanged since GCC 4.x, 2009):
//   _Any_data _M_functor   16 bytes, 8-aligned: the callable or a pointer to it
//   _M_manager             bool (*)(_Any_data& dest, const _Any_data& src, op)
//   _M_invoker             void (*)(const _Any_data&)   (for void())
// empty when _M_manager is null; op 3 (__destroy_functor) destroys.
//
// Ownership: the constructor moves the callable out, as libstdc++'s move
// constructor does (copies the three fields, nulls the source's manager and
// invoker), so TF's own destructor of its parameter then does nothing; this
// object destroys the callable once, after Run() or when it is destroyed
// without having run.
#pragma once

#include <cstring>

#include "tf_c_api.h"

namespace hvda_tf {

class TfDoneCallback {
 public:
  explicit TfDoneCallback(TF_AsyncOpKernelDoneCallback* tf_done) {
    auto* src = reinterpret_cast<LibstdcxxFunction*>(tf_done);
    std::memcpy(&f_, src, sizeof(f_));
    src->manager = nullptr;
    src->invoker = nullptr;
  }
  TfDoneCallback(TfDoneCallback&& other) noexcept : f_(other.f_) {
    other.f_.manager = nullptr;
    other.f_.invoker = nullptr;
  }
  TfDoneCallback(const TfDoneCallback&) = delete;
  TfDoneCallback& operator=(const TfDoneCallback&) = delete;
  TfDoneCallback& operator=(TfDoneCallback&&) = delete;
  ~TfDoneCallback() { Destroy(); }

  // Calls TF's callback (once; a no-op when empty or already run), then
  // destroys it.
  void Run() {
    if (f_.manager == nullptr) return;
    f_.invoker(f_.functor);
    Destroy();
  }

 private:
  // libstdc++'s std::function<void()>, field for field.
  struct LibstdcxxFunction {
    alignas(8) unsigned char functor[16];
    bool (*manager)(void* dest, const void* src, int op);
    void (*invoker)(const void* functor);
  };
  static_assert(sizeof(LibstdcxxFunction) == 32, "libstdc++'s std::function<void()> is 32 bytes");
  static constexpr int kDestroyFunctor = 3;  // _Manager_operation::__destroy_functor

  void Destroy() {
    if (f_.manager == nullptr) return;
    f_.manager(f_.functor, f_.functor, kDestroyFunctor);
    f_.manager = nullptr;
    f_.invoker = nullptr;
  }

  LibstdcxxFunction f_;
};

}  // namespace hvda_tf
