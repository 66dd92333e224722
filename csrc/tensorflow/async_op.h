// AsyncOp: one execution of an async Horovod kernel, from ComputeAsync until
// TensorFlow's done callback. Owns the input/output TF_Tensor references it
// took (so their buffers outlive the core's use of them), the done callback,
// and one completion slot per core op (several for grouped ops).
//
// Two paths (NOTE [Blocking kernels in eager mode] in async_op.cc):
// - asynchronous (graph mode, tf.function): Submit() hands the ops to the
//   core with `enqueue` and returns; the core's background thread completes
//   them and calls TF's done.
// - blocking (eager mode, the kernel's `blocking` attr): Submit() uses the
//   core's `enqueue_wait`, which runs the negotiation cycles on the calling
//   thread, counts that thread as waiting for the deadlock detection, and
//   completes every op on it; TF's done is called before Submit() returns.
//
// Lifetime, the same on both paths: created by a kernel's compute function
// with `new`; deletes itself right before calling TF's done callback, either
// at once (an error before or at enqueue), on the core's thread when the last
// of its core ops completes (asynchronous) or on the calling thread inside
// Submit() (blocking). The TF_OpKernelContext stays valid until done is
// called (TF keeps an async kernel's context alive until then), so
// completions may set outputs and failures on it from whichever thread
// completes them.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "horovod_accel/core_api.h"
#include "tf_c_api.h"
#include "tf_done_callback.h"
#include "tf_util.h"

namespace hvda_tf {

class AsyncOp {
 public:
  // blocking: this execution may block its calling thread until its ops
  // are done (the kernel's `blocking` attr, KernelConfig::blocking: eager
  // mode, whose calling thread waits for TF's done anyway); join and barrier
  // too.
  AsyncOp(TF_OpKernelContext* ctx, TF_AsyncOpKernelDoneCallback* done, bool blocking = false);
  virtual ~AsyncOp();
  AsyncOp(const AsyncOp&) = delete;
  AsyncOp& operator=(const AsyncOp&) = delete;

  TF_OpKernelContext* ctx() const { return ctx_; }

  // Input i as a TF_Tensor kept until completion; null (and Fail()) on error.
  TF_Tensor* Input(int i);
  // Keeps t (an output TF_AllocateOutput returned, ...) until completion.
  void Keep(TF_Tensor* t) { kept_.push_back(t); }

  // Records a failure (the first one wins).
  void Fail(TF_Code code, const std::string& message);
  bool failed();

  // Enqueues ops (their done/done_user are filled in here) as one call:
  // a group when several; when blocking, also waits for them (enqueue_wait).
  // Afterwards `this` may already be deleted (always, when blocking): the
  // caller must not touch it again. Consumes the op either way.
  void Submit(std::vector<hvda_core_op> ops);
  void Submit(hvda_core_op op) { Submit(std::vector<hvda_core_op>{op}); }
  // The same for join() (device -1) and barrier() on a process set.
  void SubmitJoin();
  void SubmitBarrier(int32_t process_set_id);
  // Completes the op now (with whatever failure was recorded) and deletes it.
  void Finish();

 protected:
  // Called on the completing thread for each successful core op (index in
  // the Submit() vector), before the op finishes; records a failure with
  // Fail() if it cannot use the result. Default: nothing to do.
  virtual void OnResult(int index, const hvda_core_result& result) {}

 private:
  struct Slot {
    AsyncOp* op;
    int index;
  };
  static void OnCoreDone(void* user, const hvda_core_result* result);
  // Prepares n completion slots; false (and finished) without a core link.
  bool Start(size_t n);
  // After the enqueue call returned rc: finishes on failure, else drops this
  // thread's count.
  void Enqueued(int32_t rc);

  TF_OpKernelContext* ctx_;
  const bool blocking_;
  TfDoneCallback done_;  // TF's callback, moved out of TF's std::function
  std::vector<TF_Tensor*> kept_;
  std::vector<Slot> slots_;
  std::atomic<int> pending_{0};
  std::mutex mu_;  // guards code_, message_
  TF_Code code_ = TF_OK;
  std::string message_;
};

}  // namespace hvda_tf
