#include "async_op.h"

#include "core_link.h"
#include "tf_c_api.h"

namespace hvda_tf {

// NOTE [Taking TF's done callback]
// TF_NewAsyncKernelBuilder hands compute_async_func a
// TF_AsyncOpKernelDoneCallback* that TensorFlow's C API implementation
// (tensorflow/c/kernels.cc, CAsyncOpKernel::ComputeAsync) makes by taking the
// address of its own by-value `AsyncOpKernel::DoneCallback done` parameter: a
// std::function<void()> that lives only until compute_async_func returns.
// TF_RunAsyncOpKernelDoneCallback(done) therefore works only *inside*
// compute_async_func, which would make the op synchronous and block one of
// TF's inter-op threads per pending collective (ranks whose threads block on
// different ops would deadlock). So we move that std::function into one we
// own before returning, and call ours when the collective completes. This
// relies on two facts, true of every TF release that has the async builder
// (2.11 .. 2.21): the pointee is a std::function<void()>, and TF is built
// with libstdc++, whose std::function layout is part of its stable ABI. The
// move is done on that layout (TfDoneCallback, tf_done_callback.h), so it
// holds whatever standard library this library is built with. It needs no
// TF C++ header.
AsyncOp::AsyncOp(TF_OpKernelContext* ctx, TF_AsyncOpKernelDoneCallback* done, bool blocking)
    : ctx_(ctx), blocking_(blocking), done_(done) {}

AsyncOp::~AsyncOp() {
  for (TF_Tensor* t : kept_) TF_DeleteTensor(t);
}

TF_Tensor* AsyncOp::Input(int i) {
  ScopedStatus s;
  TF_Tensor* t = nullptr;
  TF_GetInput(ctx_, i, &t, s.get());
  if (!s.ok() || t == nullptr) {
    Fail(TF_INTERNAL, "cannot read input " + std::to_string(i) + ": " + s.message());
    return nullptr;
  }
  kept_.push_back(t);
  return t;
}

void AsyncOp::Fail(TF_Code code, const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  if (code_ != TF_OK) return;
  code_ = code;
  message_ = message;
}

bool AsyncOp::failed() {
  std::lock_guard<std::mutex> lock(mu_);
  return code_ != TF_OK;
}

bool AsyncOp::Start(size_t n) {
  if (CoreApi() == nullptr || CoreRuntime() == nullptr) {
    Fail(TF_FAILED_PRECONDITION, LinkError());
    Finish();
    return false;
  }
  slots_.resize(n);
  for (size_t i = 0; i < n; ++i) slots_[i] = Slot{this, static_cast<int>(i)};
  // One extra count held by the submitting thread: completions that run
  // inside the enqueue call (a runtime that already failed) cannot finish
  // the op under us.
  pending_.store(static_cast<int>(n) + 1, std::memory_order_release);
  return true;
}

void AsyncOp::Enqueued(int32_t rc) {
  if (rc != HVDA_CORE_OK) {
    // No done callback comes for any op of that call.
    Fail(TfCode(rc), CoreApi()->last_error());
    Finish();
    return;
  }
  if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) Finish();
}

// The core table's entry for this execution: the waiting form when it blocks
// and the table has that entry, else the asynchronous one.
#define HVDA_TF_FORM(api, async_fn, wait_fn)                                         \
  ((blocking_ && HVDA_CORE_HAS_FIELD(api, hvda_core_api_v1, wait_fn) &&            \
    (api)->wait_fn != nullptr)                                                      \
       ? (api)->wait_fn                                                             \
       : (api)->async_fn)

// NOTE [Blocking kernels in eager mode]
// In eager mode TensorFlow runs a kernel's compute function on the thread
// that executes the op and blocks that thread until the kernel calls done
// (AsyncOpKernel::Compute waits on a notification): the Python thread, or
// with tf.config.experimental.set_synchronous_execution(False) the eager
// executor's one thread, which runs that thread's ops one at a time (checked
// on TF 2.21: ranks issuing two eager ops in opposite orders hang there even
// on the asynchronous path). So an eager kernel loses nothing by waiting
// itself, and it gains what core_api.h's enqueue_wait gives a waiting thread:
// the cycles run inline (no hand-off to the background thread and back), and
// the thread counts as waiting for the deadlock detection (NOTE [Deadlock
// detection] in csrc/common/coordinator.h), so an eager collective that
// another rank never submits fails with the core's deadlock error instead
// of hanging. The Python wrappers (mpi_ops.py) set the `blocking` attr to
// tf.executing_eagerly(). Graph kernels (tf.function, TF1 sessions) run on
// TF's inter-op threads, which must never block on a collective: ranks whose
// graphs issue collectives in different orders would deadlock there, while
// async kernels let every pending op negotiate. A table older than 1.1 has
// no enqueue_wait: the op then takes the asynchronous path.
void AsyncOp::Submit(std::vector<hvda_core_op> ops) {
  if (!Start(ops.size())) return;
  for (size_t i = 0; i < ops.size(); ++i) {
    ops[i].done = &AsyncOp::OnCoreDone;
    ops[i].done_user = &slots_[i];
  }
  // Both return after the ops were refused (no done), or once enqueued
  // (asynchronous: their dones come later on the core's thread) or done
  // (blocking: every OnCoreDone already ran on this thread, so Enqueued()
  // drops the last count and finishes the op here).
  const hvda_core_api_v1* api = CoreApi();
  Enqueued(HVDA_TF_FORM(api, enqueue, enqueue_wait)(CoreRuntime(), ops.data(),
                                                   static_cast<int32_t>(ops.size())));
}

// join and barrier: the same rule (their waiting forms: core C API 1.2).
void AsyncOp::SubmitJoin() {
  if (!Start(1)) return;
  const hvda_core_api_v1* api = CoreApi();
  Enqueued(HVDA_TF_FORM(api, enqueue_join, enqueue_join_wait)(CoreRuntime(), -1,
                                                              &AsyncOp::OnCoreDone, &slots_[0]));
}

void AsyncOp::SubmitBarrier(int32_t process_set_id) {
  if (!Start(1)) return;
  const hvda_core_api_v1* api = CoreApi();
  Enqueued(HVDA_TF_FORM(api, enqueue_barrier, enqueue_barrier_wait)(
      CoreRuntime(), process_set_id, &AsyncOp::OnCoreDone, &slots_[0]));
}

void AsyncOp::OnCoreDone(void* user, const hvda_core_result* result) {
  Slot* slot = static_cast<Slot*>(user);
  AsyncOp* op = slot->op;
  if (result->status != HVDA_CORE_OK) {
    op->Fail(TfCode(result->status), result->message ? result->message : "unknown error");
  } else if (!op->failed()) {
    op->OnResult(slot->index, *result);
  }
  if (op->pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) op->Finish();
}

void AsyncOp::Finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (code_ != TF_OK) SetFailure(ctx_, code_, message_);
  }
  TfDoneCallback done(std::move(done_));
  delete this;  // drops our references to the inputs/outputs first
  done.Run();
}

}  // namespace hvda_tf
